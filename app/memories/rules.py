"""The offline memory extractor: durable facts about the user from archived messages, by rules.

Owns reading each user message sentence by sentence: small talk and questions are skipped with
a reason; a first-person statement that matches a profile, preference, entity or event pattern
becomes a candidate; corrections, "I learned …" and an agent's fix after an error become lessons.
A memory's content is the sentence itself (leading fillers removed), so it never says more than
its source message. Pure and deterministic; never deduplicates against stored memories.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Final

from app.memories import patterns as p
from app.memories.changes import NOT_PREFIX
from app.memories.records import Candidate, Category, Extraction, SkipReason
from app.memories.speaker import about_user, clean, may_concern_user
from app.memories.text import at_most_words, content_words
from app.wm.anchors import PROPER_NOUN_STOP_WORDS
from app.wm.extractor import clip, sentences
from app.wm.messages import read_messages

EXTRACTOR: Final = "rules"

_KEY_NOISE: Final = frozenset(
    {"all", "some", "any", "every", "lot", "lots", "much", "many", "kind", "sort", "thing",
     "things", "stuff", "one", "ones", "new", "own", "not", "no", "never", "don't", "anymore",
     "again", "now", "still"}
)  # fmt: skip
_KEY_WORDS: Final = 3


@dataclass(frozen=True, slots=True)
class RuleConfig:
    max_content_chars: int = 300
    hedge_penalty: float = 0.35
    past_penalty: float = 0.1
    hypothetical_confidence: float = 0.3
    chit_chat_max_words: int = 8
    exclamation_max_words: int = 6


DEFAULT_RULE_CONFIG: Final = RuleConfig()


class _Kind(Enum):
    CHIT_CHAT = "chit_chat"
    QUESTION = "question"
    STATEMENT = "statement"


def slot_key(text: str) -> str | None:
    """The first few content words of a phrase up to its clause's end: what a slot is about
    (``creating art every weekend`` → ``creat art every``)."""
    clause = p.TIME_MARKER.sub(" ", p.CLAUSE_END.split(text, maxsplit=1)[0])
    words = [word for word in content_words(clause) if word not in _KEY_NOISE]
    return " ".join(words[:_KEY_WORDS]) or None


def _kind(sentence: str, config: RuleConfig) -> _Kind:
    if sentence.endswith("?"):
        return _Kind.QUESTION
    if p.CHIT_CHAT.match(sentence) and at_most_words(sentence, config.chit_chat_max_words):
        return _Kind.CHIT_CHAT
    if at_most_words(sentence, 2) or (
        sentence.endswith("!")
        and at_most_words(sentence, config.exclamation_max_words)
        and not about_user(sentence)
    ):
        # "Wow, that's cool!": a short exclamation about nothing of the user's.
        return _Kind.CHIT_CHAT
    return _Kind.STATEMENT


def _confidence(sentence: str, base: float, config: RuleConfig) -> float:
    penalty = config.hedge_penalty if p.HEDGE.search(sentence) else 0.0
    return round(max(0.0, min(1.0, base - penalty)), 2)


def _group(match: re.Match[str], *names: str) -> str:
    groups = match.groupdict()
    return next((groups[name] for name in names if groups.get(name)), "")


def _candidate(
    category: Category,
    content: str,
    seq: int,
    confidence: float,
    rule: str,
    slot: str | None = None,
    slot_value: str | None = None,
) -> Candidate:
    return Candidate(
        category=category,
        content=content,
        confidence=confidence,
        source_seqs=(seq,),
        slot=slot,
        slot_value=slot_value,
        rule=rule,
    )


def _preference(sentence: str, seq: int, config: RuleConfig) -> Candidate | None:
    favourite = p.FAVOURITE.search(sentence)
    if favourite is not None:
        what = slot_key(favourite.group("what") or "")
        return _candidate(
            Category.PREFERENCE,
            sentence,
            seq,
            _confidence(sentence, 0.9, config),
            "preference.favourite",
            f"favorite {what}" if what else "favorite",
            slot_key(favourite.group("value")),
        )
    after = p.FAVOURITE_AFTER.search(sentence) if p.FAVOURITE_MENTION.search(sentence) else None
    if after is not None and about_user(after.group(0)):
        what = slot_key(after.group("what") or "")
        return _candidate(
            Category.PREFERENCE,
            sentence,
            seq,
            _confidence(sentence, 0.8, config),
            "preference.favourite",
            f"favorite {what}" if what else None,
            slot_key(after.group("value")) if what else None,
        )
    dislike = p.DISLIKE.search(sentence)
    if dislike is not None:
        key = slot_key(_group(dislike, "object", "object2", "object3"))
        return _candidate(
            Category.PREFERENCE,
            sentence,
            seq,
            _confidence(sentence, 0.8, config),
            "preference.dislike",
            f"likes:{key}" if key else None,
            "no" if key else None,
        )
    rather = p.RATHER.search(sentence)
    compared = None if rather is None else _comparison(rather.group("object"), "prefer")
    if compared is not None:
        return _candidate(
            Category.PREFERENCE,
            sentence,
            seq,
            _confidence(sentence, 0.8, config),
            "preference.comparison",
            *compared,
        )
    like = p.LIKE.search(sentence)
    if like is not None:
        thing = _group(like, "object", "object2")
        compared = _comparison(thing, (like.group("verb") or "").lower())
        if compared is not None:
            slot, value = compared
            return _candidate(
                Category.PREFERENCE,
                sentence,
                seq,
                _confidence(sentence, 0.8, config),
                "preference.comparison",
                slot,
                value,
            )
        key = None if p.REFERENTIAL_OBJECT.match(thing.strip()) else slot_key(thing)
        if key is not None:
            past = (like.group("verb") or "").lower().endswith("ed")
            base = 0.8 - (config.past_penalty if past else 0.0)
            if p.HYPOTHETICAL.search(sentence[: like.start()]):
                base = config.hypothetical_confidence
            return _candidate(
                Category.PREFERENCE,
                sentence,
                seq,
                _confidence(sentence, base, config),
                "preference.like",
                f"likes:{key}",
                "yes",
            )
    passion = p.PASSION.search(sentence)
    if passion is not None:
        loved = _group(passion, "object", "object2", "object3").strip()
        key = None if p.REFERENTIAL_OBJECT.match(loved) else slot_key(loved)
        if key is not None:
            return _candidate(
                Category.PREFERENCE,
                sentence,
                seq,
                _confidence(sentence, 0.75, config),
                "preference.passion",
                f"likes:{key}",
                "yes",
            )
    wish = p.WISH.search(sentence)
    wished = "" if wish is None else _group(wish, "object", "object2").strip()
    if wished and not p.REFERENTIAL_OBJECT.match(wished) and slot_key(wished):
        return _candidate(
            Category.PREFERENCE, sentence, seq, config.hypothetical_confidence, "preference.wish"
        )
    return None


def _comparison(thing: str, verb: str) -> tuple[str, str] | None:
    """The slot and value of a preference between two things: ``prefers:space|tab`` with the
    preferred one as its value, the same slot whichever way round it is said, so that "spaces
    over tabs" after "tabs over spaces" is a change of mind."""
    thing = p.COMPARED_VERB.sub("", thing.strip())
    match = p.COMPARISON.match(thing)
    if match is None and verb.startswith("prefer"):
        match = p.COMPARISON_TO.match(thing)
    if match is None:
        return None
    preferred = slot_key(match.group("preferred"))
    other = slot_key(p.COMPARED_VERB.sub("", match.group("other")))
    if preferred is None or other is None or preferred == other:
        return None
    return f"prefers:{'|'.join(sorted((preferred, other)))}", preferred


def _withdrawn(sentence: str) -> str | None:
    """The positive statement a withdrawal takes back ("I no longer live in Berlin" → "I live
    in Berlin"), or ``None`` when the sentence withdraws nothing."""
    for pattern, replacement in p.WITHDRAWALS:
        positive, count = pattern.subn(replacement, sentence, count=1)
        if count:
            return positive
    return None


def _profile_slot(sentence: str) -> tuple[p.SlotRule, str | None] | None:
    for rule in p.PROFILE_SLOTS:
        match = rule.pattern.search(sentence)
        if match is not None:
            return rule, slot_key(_group(match, "value", "value2", "value3"))
    return None


def _profile(sentence: str, seq: int, config: RuleConfig) -> Candidate | None:
    positive = _withdrawn(sentence)
    found = _profile_slot(sentence if positive is None else positive)
    if found is not None:
        rule, value = found
        slot = rule.slot if value else None
        if rule.keyed and value:
            slot, value = f"{rule.slot}:{value}", "yes"
        if positive is not None and value:
            value = f"{NOT_PREFIX}{value}"
        return _candidate(
            Category.PROFILE,
            sentence,
            seq,
            _confidence(sentence, rule.confidence, config),
            rule.name if positive is None else f"{rule.name}.withdrawn",
            slot,
            value,
        )
    for name, pattern, base in p.PROFILE_FACTS:
        if pattern.search(sentence):
            return _candidate(
                Category.PROFILE, sentence, seq, _confidence(sentence, base, config), name
            )
    return None


def _entity(sentence: str, seq: int, config: RuleConfig) -> Candidate | None:
    for pattern in p.ENTITY:
        match = pattern.search(sentence)
        if match is not None and match.group("name").lower() not in PROPER_NOUN_STOP_WORDS:
            return _candidate(
                Category.ENTITY, sentence, seq, _confidence(sentence, 0.75, config), "entity.named"
            )
    return None


def _event(sentence: str, seq: int, config: RuleConfig) -> Candidate | None:
    if p.EVENT_ACTION.search(sentence) is None:
        return None
    if p.TIME_MARKER.search(sentence):
        return _candidate(
            Category.EVENT, sentence, seq, _confidence(sentence, 0.7, config), "event.dated"
        )
    life = p.LIFE_EVENT.search(sentence)
    if life is not None and not p.NEGATION.search(sentence[: life.start()]):
        return _candidate(
            Category.EVENT, sentence, seq, _confidence(sentence, 0.65, config), "event.life"
        )
    return None


def classify(
    sentence: str, seq: int, *, after_agent: bool, config: RuleConfig = DEFAULT_RULE_CONFIG
) -> Candidate | None:
    """The memory a cleaned user sentence states, or ``None``."""
    if after_agent and p.CORRECTION.match(sentence):
        return _candidate(
            Category.LESSON, sentence, seq, _confidence(sentence, 0.6, config), "lesson.correction"
        )
    if not about_user(sentence) or p.ANY_STATEMENT.search(sentence) is None:
        return None
    return read_statement(sentence, seq, config)


def read_statement(
    sentence: str, seq: int, config: RuleConfig = DEFAULT_RULE_CONFIG
) -> Candidate | None:
    """The memory a user's sentence about themselves states, by the first rule that reads one:
    never one when ``patterns.ANY_STATEMENT`` finds nothing in it (``classify`` scans first)."""
    if p.LEARNED.search(sentence):
        return _candidate(
            Category.LESSON, sentence, seq, _confidence(sentence, 0.65, config), "lesson.learned"
        )
    return (
        _preference(sentence, seq, config)
        or _profile(sentence, seq, config)
        or _entity(sentence, seq, config)
        or _event(sentence, seq, config)
    )


def _read_sentence(
    raw: str, seq: int, kinds: list[_Kind], *, after_agent: bool, config: RuleConfig
) -> list[Candidate]:
    """The memory a user's sentence states, if any; its kind is added to ``kinds``."""
    sentence = clean(raw)
    if not sentence:
        return []
    kind = _kind(sentence, config)
    kinds.append(kind)
    if kind is not _Kind.STATEMENT:
        return []
    found = classify(
        clip(sentence, config.max_content_chars), seq, after_agent=after_agent, config=config
    )
    return [] if found is None else [found]


def _from_user(
    text: str, seq: int, *, after_agent: bool, config: RuleConfig
) -> tuple[list[Candidate], SkipReason | None]:
    found: list[Candidate] = []
    kinds: list[_Kind] = []
    # Past the first statement (it decides the skip reason), a sentence that cannot speak of the
    # user is passed over: a long pasted output is read only where it says "I" or "my".
    for raw in sentences(text):
        if (
            len(raw) <= config.max_content_chars
            and _Kind.STATEMENT in kinds
            and not may_concern_user(raw, corrections=after_agent)
        ):
            continue
        found += _read_sentence(raw, seq, kinds, after_agent=after_agent, config=config)
    if found or not kinds:
        return found, None
    if all(kind is _Kind.CHIT_CHAT for kind in kinds):
        return [], SkipReason.CHIT_CHAT
    if _Kind.STATEMENT not in kinds:
        return [], SkipReason.QUESTION
    return [], SkipReason.NO_DURABLE_FACT


def _agent_lessons(text: str, seq: int, config: RuleConfig) -> list[Candidate]:
    if text.isascii() and p.FIX.search(" ".join(text.replace("**", "").split())) is None:
        # Each sentence, cleaned, is a stretch of the text so flattened (lines and spaces
        # joined, bold marks gone) up to the case of its first letter: when the flattened
        # text states no fix, no sentence does.
        return []
    return [
        _candidate(
            Category.LESSON,
            clip(sentence, config.max_content_chars),
            seq,
            _confidence(sentence, 0.7, config),
            "lesson.fix",
        )
        for sentence in map(clean, sentences(text))
        if sentence and not sentence.endswith("?") and p.FIX.search(sentence)
    ]


def extract_memories(
    messages: Sequence[tuple[int, Mapping[str, object]]],
    config: RuleConfig = DEFAULT_RULE_CONFIG,
) -> Extraction:
    """Candidates from ``(seq, message)`` pairs, and why user messages yielded none.

    Only user messages speak about the user; an assistant message contributes a lesson when it
    states a fix after an error was seen (in a tool result or an earlier message of the batch).
    """
    return RuleScan().read(messages, config).extraction()


@dataclass(frozen=True, slots=True)
class RuleScan:
    """Where ``extract_memories`` stands after some of an archive's messages: what it found
    so far, and the two things a later message's reading depends on (whether an error was seen,
    who spoke last). Reading the rest from here finds what reading them all at once finds."""

    candidates: tuple[Candidate, ...] = ()
    skipped: Mapping[str, int] = field(default_factory=dict)
    error_seen: bool = False
    previous_role: str = ""

    def read(
        self,
        messages: Sequence[tuple[int, Mapping[str, object]]],
        config: RuleConfig = DEFAULT_RULE_CONFIG,
    ) -> RuleScan:
        """The scan after ``messages`` too."""
        seqs = [seq for seq, _ in messages]
        candidates = list(self.candidates)
        skipped = Counter(self.skipped)
        error_seen, previous_role = self.error_seen, self.previous_role
        for view in read_messages([message for _, message in messages]):
            seq = seqs[view.position]
            if view.role == "user" and view.text.strip():
                found, reason = _from_user(
                    view.text, seq, after_agent=previous_role == "assistant", config=config
                )
                candidates += found
                if reason is not None:
                    skipped[reason.value] += 1
            if not error_seen and view.role in ("assistant", "tool"):
                error_seen = p.ERROR_SEEN.search(view.text) is not None
            if view.role == "assistant" and error_seen:
                candidates += _agent_lessons(view.text, seq, config)
            if view.role != "system":
                previous_role = view.role
        return RuleScan(tuple(candidates), dict(skipped), error_seen, previous_role)

    def extraction(self) -> Extraction:
        return Extraction(self.candidates, dict(self.skipped), EXTRACTOR)
