"""The rule extractor's shortcuts read exactly what the full rules read.

A sentence is scanned once for every statement pattern, words are counted only as far as a
threshold, first-person words are found without listing every token, and an agent's message is
searched for a fix once as a whole: each shortcut is checked here against the reading it
replaces, on the rules' own example sentences and on edge cases of wording and characters.
"""

from __future__ import annotations

import re

import pytest

from app.memories import patterns as p
from app.memories.records import Category
from app.memories.rules import classify, extract_memories, read_statement
from app.memories.speaker import about_user, clean, may_concern_user
from app.memories.text import at_most_words, normalise, tokens, whole_words
from tests.support.memory_sentences import SENTENCES

EDGES = [
    "for i in range(10): total += my_list[i]",
    "a_i = my_var; we_re = 3",
    "x'i and i'x, don't'i",
    "Bob is my friend and he loves jazz.",
    "bob, my brother, moved to Oslo.",
    "This is a thing I do.",
    "Went hiking with Sam last week.",
    "just got a new job at Acme.",
    "Painting makes me so happy!",
    "My hobby is pottery.",
    "We visited Rome in 2019.",
    "I’m from Chile, originally.",
    "I no longer live in Berlin.",
    "I don't have a dog anymore.",
    "I'm not married anymore.",
    "I'm no longer vegan.",
    "I work for a small bakery.",
    "I've got two cats.",
    "I studied law in Lyon.",
    "I'd rather use tabs over spaces.",
    "Tea is definitely my favourite drink.",
    "My all-time favourite film is Alien.",
    "A friend named Lucy came over.",
    "My sister's name is Anna.",
    "İ am vegan now.",
    "ı'm a teacher at the school.",
    "I AM 40 YEARS OLD.",
    "MY NAME IS KIM.",
    "Traceback (most recent call last): File 'x.py', line 3, in main",
    "ValueError: invalid literal for int() with base 10: 'abc'",
    "The meeting was moved to Friday.",
    "Ｉ love ｔｅａ.",
    "ﬁne, I’ll go; I’ve learned that it works.",
    "Straße café: we’re moving, our home is sold.",
    "",
]
CORPUS = [sentence for sentence, *_ in SENTENCES] + EDGES


@pytest.mark.parametrize("text", CORPUS)
def test_one_scan_finds_a_statement_iff_one_of_the_rules_patterns_does(text: str) -> None:
    one_by_one = any(pattern.search(text) for pattern in p.STATEMENT_PATTERNS)
    assert (p.ANY_STATEMENT.search(text) is not None) is one_by_one


def test_every_statement_pattern_is_met_in_the_examples() -> None:
    """The scan's check above is only as good as its examples: each pattern must find something
    in at least one of them, so that leaving a pattern out of the scan would fail it."""
    unmatched = [
        pattern.pattern[:40]
        for pattern in p.STATEMENT_PATTERNS
        if not any(pattern.search(text) for text in CORPUS)
    ]
    assert unmatched == []


@pytest.mark.parametrize("pattern", p.STATEMENT_PATTERNS, ids=lambda pattern: pattern.pattern[:30])
def test_statement_patterns_start_where_the_scan_looks(pattern: re.Pattern[str]) -> None:
    """``any_of`` tries only the text's start and words beginning with i, m, w, a or a capital:
    every match of every pattern must start at such a place, and use no flag it cannot keep."""
    assert pattern.flags & ~(re.IGNORECASE | re.UNICODE) == 0
    assert "(?P=" not in pattern.pattern
    for text in CORPUS:
        for start in range(len(text)):
            if pattern.match(text, start) is not None and start > 0:
                assert re.match(r"(?i:[imwa])|[A-Z]", text[start]), (text, start)


def test_the_scan_drops_group_names_and_keeps_case_where_a_pattern_has_it() -> None:
    names = re.compile(r"(?P<first>[A-Z][a-z]+) met (?P<second>\w+)")
    anywhere = re.compile(r"\bi (?P<verb>swim|run)\b", re.IGNORECASE)
    scan = p.any_of((names, anywhere))
    assert scan.groupindex == {}
    assert scan.search("then Anna met Bo") is not None
    assert scan.search("then anna met bo") is None
    assert scan.search("Yes, I SWIM daily") is not None
    assert scan.search("Yes, Iswim daily") is None


@pytest.mark.parametrize("text", CORPUS)
def test_what_the_scan_passes_over_states_nothing_by_any_rule(text: str) -> None:
    found = read_statement(text, 3)
    if p.ANY_STATEMENT.search(text) is None:
        assert found is None
    # classify reads only what is about the user, and then reads it the same way.
    assert classify(text, 3, after_agent=False) in (None, found)


FIRST_PERSON = {"i", "i'm", "i've", "me", "my", "we", "we're", "our"}


@pytest.mark.parametrize("text", [*CORPUS, "I", "i'm'", "'i'", "my's", "o'my", "x’i", "_i_"])
def test_whole_words_finds_a_word_iff_the_tokenizer_reads_it(text: str) -> None:
    found = whole_words(FIRST_PERSON).search(normalise(text)) is not None
    assert found is any(word in FIRST_PERSON for word in tokens(text))


@pytest.mark.parametrize(
    "text",
    [*CORPUS, "one", "one two", "one two three", "don't stop", "x’y z", "ﬁ ﬂ", "Ⅻ ½ 2²", " , "],
)
@pytest.mark.parametrize("limit", [0, 1, 2, 3, 6, 8])
def test_counting_words_up_to_a_limit(text: str, limit: int) -> None:
    assert at_most_words(text, limit) is (len(tokens(text)) <= limit)


def _lessons(text: str) -> list[str]:
    extraction = extract_memories(
        [
            (1, {"role": "tool", "content": "Traceback: KeyError 'email'"}),
            (2, {"role": "assistant", "content": text}),
        ]
    )
    return [c.content for c in extraction.candidates if c.category is Category.LESSON]


@pytest.mark.parametrize(
    ("text", "lessons"),
    [
        ("Fixed it by adding a default.", ["Fixed it by adding a default."]),
        ("**Fixed** it  by\tadding a default.", ["Fixed it by adding a default."]),
        ("1. Checked the logs.\n2. The   root cause was a typo.", ["The root cause was a typo."]),
        ("> the fix was\nto pin the version", ["The fix was"]),
        ("fi**xed it by** pinning", ["Fixed it by pinning"]),
        ("So, it works now that the cache is off", ["It works now that the cache is off"]),
        ("Mel, the problem is the path.", ["The problem is the path."]),
        ("ﬁxed it by pinning the version.", ["FIxed it by pinning the version."]),
        ("The build is green.", []),
        ("Fixed it by pinning?", []),
    ],
)
def test_an_agent_s_fix_is_found_however_the_message_is_laid_out(
    text: str, lessons: list[str]
) -> None:
    assert _lessons(text) == lessons


PASSED_OVER = [
    *CORPUS,
    "total = my_list[i] + offset_2",
    "for i_x in range(3): went_on = 1",
    "    assert self.went2 == 'ok'",
    "So, no, that's wrong.",
    "Mel, no, the other branch.",
    "well honestly, actually, rerun it.",
    "that is not what i asked for",
    "No,",
    "Nope! run it again",
    "x = 'i' if flag else 'we'",
    "INFO: Started server process [2714]",
]


@pytest.mark.parametrize("text", PASSED_OVER)
@pytest.mark.parametrize("after_agent", [False, True])
def test_a_sentence_passed_over_states_nothing(text: str, after_agent: bool) -> None:
    """What ``may_concern_user`` lets the rules pass over is neither about the user nor, after
    the agent, a correction: classifying it finds nothing."""
    if may_concern_user(text, corrections=after_agent):
        return
    cleaned = clean(text)
    assert not about_user(cleaned)
    assert classify(cleaned, 1, after_agent=after_agent) is None


def test_sentences_passed_over_include_code_and_exclude_statements() -> None:
    assert not may_concern_user("total = compute(values)[0] + offset", corrections=True)
    assert may_concern_user("for i in range(3): pass", corrections=False)
    assert may_concern_user("Went to the lake.", corrections=False)
    assert may_concern_user("That's wrong, use the other branch.", corrections=True)
    assert not may_concern_user("That's wrong, use the other branch.", corrections=False)
    assert may_concern_user("café: j'ai fini", corrections=False)


def test_a_statement_inside_a_long_pasted_output_is_found() -> None:
    lines = [f"  File 'app/module_{n}.py', line {n}, in handler" for n in range(200)]
    lines.insert(120, "I prefer tabs over spaces.")
    long_line = "x" * 400 + " I love myth"
    text = "\n".join(["Here is the output:", *lines, long_line])
    extraction = extract_memories([(5, {"role": "user", "content": text})])
    assert [c.content for c in extraction.candidates] == ["I prefer tabs over spaces."]
    assert extraction.skipped == {}
