"""The offline memory extractor: sentence rules, skip reasons, provenance (table-driven)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from app.memories.records import Category, SkipReason
from app.memories.rules import RuleConfig, classify, extract_memories, slot_key
from app.memories.text import content_words
from tests.support.memory_sentences import SENTENCES

C = Category


@pytest.mark.parametrize(("sentence", "category", "rule", "slot", "value"), SENTENCES)
def test_sentence_rules(
    sentence: str,
    category: Category | None,
    rule: str | None,
    slot: str | None,
    value: str | None,
) -> None:
    found = classify(sentence, 7, after_agent=False)
    if category is None:
        assert found is None
        return
    assert found is not None
    assert (found.category, found.rule, found.slot, found.slot_value) == (
        category,
        rule,
        slot,
        value,
    )
    assert found.content == sentence
    assert found.source_seqs == (7,)


@pytest.mark.parametrize(
    ("sentence", "confidence"),
    [
        ("I love hiking.", 0.8),
        ("I loved the concert.", 0.7),
        ("I think I might like sushi.", 0.45),
        ("Maybe I moved to Rome.", 0.45),
        ("I'd love to visit Japan.", 0.3),
        ("If I had time, I love to paint.", 0.3),
        ("My favorite color is teal.", 0.9),
    ],
)
def test_confidence_of_hedged_past_and_hypothetical_statements(
    sentence: str, confidence: float
) -> None:
    found = classify(sentence, 1, after_agent=False)
    assert found is not None
    assert found.confidence == confidence


def test_a_correction_right_after_the_agent_is_a_lesson() -> None:
    correction = "No, the staging database is called billing_stage."
    found = classify(correction, 4, after_agent=True)
    assert found is not None
    assert (found.category, found.rule) == (C.LESSON, "lesson.correction")
    assert classify(correction, 4, after_agent=False) is None


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": text}


def numbered(
    *messages: Mapping[str, object], first: int = 10
) -> list[tuple[int, Mapping[str, object]]]:
    return list(enumerate(messages, start=first))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Hey Mel! Good to see you!", SkipReason.CHIT_CHAT),
        ("Thanks, Melanie! That's so sweet.", SkipReason.CHIT_CHAT),
        ("Wow!", SkipReason.CHIT_CHAT),
        ("How have you been? What's new?", SkipReason.QUESTION),
        ("Hi! Did you go to the show?", SkipReason.QUESTION),
        ("The colors really blend nicely in that painting.", SkipReason.NO_DURABLE_FACT),
        ("Hey! It was a long day at the office, honestly.", SkipReason.NO_DURABLE_FACT),
    ],
)
def test_messages_without_a_memory_are_skipped_with_a_reason(text: str, reason: SkipReason) -> None:
    extraction = extract_memories(numbered(user(text)))
    assert extraction.candidates == ()
    assert extraction.skipped == {reason.value: 1}


def test_only_user_messages_are_read_for_facts_about_the_user() -> None:
    extraction = extract_memories(
        numbered(
            {"role": "system", "content": "Session 1 began at 1:56 pm on 8 May, 2023."},
            assistant("I love painting lake sunrises."),
            user("Hey Mel! I love creating art! How are you?"),
            user(""),
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
        )
    )
    assert [(c.content, c.source_seqs) for c in extraction.candidates] == [
        ("I love creating art!", (12,))
    ]
    assert extraction.skipped == {}
    assert extraction.extractor == "rules"


def test_fillers_and_the_listener_s_name_are_not_part_of_a_memory() -> None:
    extraction = extract_memories(
        numbered(user("Mel, so I went to a poetry reading last Friday! Paris, I love it."))
    )
    assert [c.content for c in extraction.candidates] == ["I went to a poetry reading last Friday!"]


def test_an_agent_s_fix_after_an_error_is_a_lesson() -> None:
    extraction = extract_memories(
        numbered(
            user("Please run the tests."),
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "KeyError: 'email'"},
            assistant("Fixed it by adding a default email in app/models/user.py."),
            assistant("The fix was a default value?"),
        )
    )
    lessons = [c for c in extraction.candidates if c.category is C.LESSON]
    assert [(c.content, c.source_seqs, c.rule) for c in lessons] == [
        ("Fixed it by adding a default email in app/models/user.py.", (13,), "lesson.fix")
    ]


def test_without_an_error_an_agent_s_claim_is_no_lesson() -> None:
    extraction = extract_memories(numbered(assistant("The fix was easy: I added a default.")))
    assert extraction.candidates == ()


def test_long_sentences_are_clipped_at_a_word_boundary() -> None:
    text = "I love " + " ".join(f"word{n}" for n in range(100)) + "."
    [found] = extract_memories(numbered(user(text)), RuleConfig(max_content_chars=60)).candidates
    assert len(found.content) <= 60
    assert found.content.endswith("…")
    assert set(content_words(found.content.rstrip("…"))) <= set(content_words(text))


@pytest.mark.parametrize(
    ("phrase", "key"),
    [
        ("creating art every weekend, with friends", "creat art weekend"),
        ("all the yellow leaves", "yellow leave"),
        ("Berlin last month", "berlin"),
        ("tea over coffee", "tea"),
        ("it", None),
        ("", None),
    ],
)
def test_slot_keys(phrase: str, key: str | None) -> None:
    assert slot_key(phrase) == key


# --- changes of mind: one attribute, said one way then changed -----------------------------------

P, R = C.PREFERENCE, C.PROFILE

# category, slot, first value, changed value, the first statement, the change
CHANGES: list[tuple[Category, str, str, str, str, str]] = [
    # A preference between two things, by the things compared, whichever way round.
    (P, "prefers:space|tab", "tab", "space",
     "I prefer tabs over spaces.", "I prefer spaces over tabs now."),
    (P, "prefers:coffee|tea", "tea", "coffee",
     "I prefer tea to coffee.", "Actually I now prefer coffee over tea."),
    (P, "prefers:cat|dog", "cat", "dog",
     "I like cats more than dogs.", "These days I like dogs better than cats."),
    (P, "prefers:python|rust", "python", "rust",
     "I'd rather use Python instead of Rust.", "I prefer Rust rather than Python now."),
    # A preference for one thing, reversed.
    (P, "likes:coffee", "yes", "no", "I love coffee.", "I don't like coffee anymore."),
    (P, "likes:jazz", "yes", "no", "I'm a huge fan of jazz.", "I'm no longer into jazz."),
    (P, "favorite color", "teal", "red", "My favorite color is teal.", "My favorite color is red."),
    # Residence.
    (R, "lives in", "berlin", "munich", "I live in Berlin.", "I live in Munich now."),
    (R, "lives in", "berlin", "munich", "I live in Berlin.", "I moved to Munich last month."),
    (R, "lives in", "berlin", "not berlin", "I'm based in Berlin.", "I no longer live in Berlin."),
    # Job and employer, each its own attribute.
    (R, "works as", "nurse", "teacher", "I work as a nurse.", "My job is teacher now."),
    (R, "works at", "google", "microsoft", "I work at Google.", "I work for Microsoft now."),
    (R, "works at", "google", "not google", "I work at Google.", "I no longer work at Google."),
    (R, "works at", "acme", "globex", "I'm employed by Acme.",
     "I just started a new job at Globex."),
    # Name.
    (R, "name", "dana", "dee", "My name is Dana.", "My name is Dee."),
    # Relationship status.
    (R, "relationship status", "marry", "divorc", "I'm married.", "I'm divorced now."),
    (R, "relationship status", "single", "engag", "I am single.", "I'm engaged!  So happy about it."),
    (R, "relationship status", "marry", "not marry", "I'm married.", "I'm not married anymore."),
    # Pets, one attribute per kind of pet.
    (R, "has pet:dog", "yes", "not yes", "I have a dog.", "I don't have a dog anymore."),
    (R, "has pet:cat", "yes", "not yes", "I've got two cats.", "I no longer have cats."),
    # Diet.
    (R, "diet", "vegan", "vegetarian", "I'm vegan.", "I'm vegetarian now."),
    (R, "diet", "vegan", "not vegan", "I'm vegan.", "I'm no longer vegan."),
]  # fmt: skip


@pytest.mark.parametrize(("category", "slot", "first", "changed", "said", "change"), CHANGES)
def test_a_changed_value_states_the_same_attribute(
    category: Category, slot: str, first: str, changed: str, said: str, change: str
) -> None:
    before = classify(said, 1, after_agent=False)
    after = classify(change, 2, after_agent=False)
    assert before is not None
    assert after is not None
    assert (before.category, before.slot, before.slot_value) == (category, slot, first)
    assert (after.category, after.slot, after.slot_value) == (category, slot, changed)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # Owning a dog and owning a cat are two attributes, not one changed.
        ("I have a dog.", "I have a cat."),
        # A job and an employer are two attributes.
        ("I work as a nurse.", "I work at the city hospital."),
        # "going to the park" is one thing liked, not a comparison.
        ("I like going to the park.", "I like going to the beach."),
    ],
)
def test_different_attributes_are_different_slots(first: str, second: str) -> None:
    one = classify(first, 1, after_agent=False)
    two = classify(second, 2, after_agent=False)
    assert one is not None
    assert two is not None
    assert one.slot != two.slot
