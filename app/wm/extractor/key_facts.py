"""Key Facts & Decisions: ranked facts from the batch, and the consolidation guard B accepts.

Owns what counts as a fact (tool calls, sentences with names, dates, numbers, decisions, the
user's own preferences; a sentence under four words only with a number or a date), how
many are taken, and how an over-full section is packed and digested while keeping its anchors.
Never writes the guard's sentinel: an over-full section is consolidated instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Final

from app.wm.anchors import (
    DECISION_WORDS,
    PROPER_NOUN_STOP_WORDS,
    AnchorSpan,
    anchor_spans,
    lines_anchors,
)
from app.wm.extractor.arguments import append_op, keep_op, update_op
from app.wm.extractor.config import ExtractorConfig
from app.wm.extractor.constraints import is_preference_sentence
from app.wm.extractor.dates import format_day, has_relative_time, resolve_relative
from app.wm.extractor.reading import Reading, clip, is_greeting, label, sentences
from app.wm.extractor.tool_calls import SKIPPED_TOOLS, call_summary, result_summary
from app.wm.guards import SENTINEL, without_sentinel
from app.wm.items import normalise, split_items
from app.wm.messages import MessageView, ToolCallView
from app.wm.tokens import TokenCounter

DIGEST_PREFIX: Final = "Earlier facts:"

_DIGIT: Final = re.compile(r"\d")
# Backticked text, an amount, a word holding a digit (up to its last ``.:-`` part), a word that
# does not start with a lower-case ASCII letter, or a decision word. A word holding a digit is
# found at its first digit (the letters before it, then a digit): the same match as looking for
# its last one, without trying every shorter prefix of the word.
_BACKTICKED: Final = r"`[^`\n]+`"
_AMOUNT: Final = r"\$\d[\d,]*(?:\.\d+)?"
_WITH_DIGIT: Final = r"(?<![\w.])[^\W\d_]*\d[\w.:-]*"
_CAPITALISED: Final = r"[^\W\d_a-z][^\W_]{2,}"
_DECISION: Final = r"(?<!\w)(?i:" + "|".join(DECISION_WORDS) + r")(?!\w)"


def _fact_tokens(*, digits: bool, decisions: bool, flags: int = 0) -> re.Pattern[str]:
    """The pattern without the alternatives a sentence cannot match (an amount and a word with
    a digit need a digit, a decision word needs its letters): the others match the same."""
    numbers = [_AMOUNT, _WITH_DIGIT] if digits else []
    words = [_DECISION] if decisions else []
    return re.compile("|".join([_BACKTICKED, *numbers, _CAPITALISED, *words]), flags)


_FACT_TOKEN: Final = _fact_tokens(digits=True, decisions=True)
_FACT_TOKEN_ASCII: Final = {
    (digits, decisions): _fact_tokens(digits=digits, decisions=decisions, flags=re.ASCII)
    for digits in (False, True)
    for decisions in (False, True)
}
"""The same patterns for ASCII text, which they read alike (they have no whitespace class, the
one whose ASCII meaning differs on ASCII text): ASCII classes are cheaper to test, and in ASCII
text a decision word in any case is one in its lower-case form."""
_FACT_MIN_WORDS: Final = 4
_STATEMENT_MIN_WORDS: Final = 7


def key_facts_op(
    reading: Reading, prior: str, counter: TokenCounter, config: ExtractorConfig
) -> dict[str, object]:
    calls, statements = _fact_candidates(reading, config)
    known = {normalise(item) for item in split_items(prior)}

    def fresh(text: str) -> bool:
        key = normalise(text)
        if not key or key in known:
            return False
        known.add(key)
        return True

    chosen: list[tuple[int, str]] = []
    # Tool calls outrank every statement, in order; their text is made only for those taken
    # (an archive of thousands of calls would otherwise summarise every one of them).
    for order, make, views in calls:
        if len(chosen) >= config.key_facts_per_batch:
            break
        text = make()
        if fresh(text):
            chosen.append((order, reading.cite(text, *views)))
    # A statement's text is clipped only once it is looked at (most never are).
    for score, order, fact, view in sorted(statements, key=lambda e: (-e[0], e[1])):
        if len(chosen) >= config.key_facts_per_batch or score == 0:
            break
        text = clip(fact, config.item_chars)
        if fresh(text):
            chosen.append((order, reading.cite(text, view)))
    if len(chosen) < config.key_facts_minimum:
        # A short exchange without names, dates or numbers still has a point: keep its most
        # substantial statements rather than nothing.
        clipped = ((s, o, clip(fact, config.item_chars), v) for s, o, fact, v in statements)
        plain = sorted(
            (e for e in clipped if e[0] == 0 and _is_statement(e[2])),
            key=lambda entry: (-len(entry[2]), entry[1]),
        )
        for _, order, text, view in plain:
            if len(chosen) >= config.key_facts_minimum:
                break
            if fresh(text):
                chosen.append((order, reading.cite(text, view)))
    facts = [text for _, text in sorted(chosen)]
    old = split_items(without_sentinel(prior))
    over = SENTINEL in prior or len(old) + len(facts) > config.key_facts_limit_items
    if not over:
        body = "\n".join(f"- {item}" for item in [*old, *facts])
        over = counter(body) > config.key_facts_limit_tokens
    if not over:
        return append_op(facts) if facts else keep_op()
    return update_op(_consolidate_facts(old, facts, counter, config))


Calls = list[tuple[int, Callable[[], str], tuple[MessageView | None, ...]]]
Statements = list[tuple[int, int, str, MessageView]]


def _fact_candidates(reading: Reading, config: ExtractorConfig) -> tuple[Calls, Statements]:
    """Every possible fact, in conversation order: tool calls as ``(order, make text, the call
    and its result)``, and statements as ``(score, order, text, message)``, scored 0 below the
    threshold of 2 (the text not yet clipped)."""
    calls: Calls = []
    statements: Statements = []
    order = 0
    for index, view in enumerate(reading.views):
        for number, call in enumerate(view.tool_calls):
            if call.name in SKIPPED_TOOLS:
                continue
            result = reading.results.get((index, number))
            calls.append((order, partial(_call_fact, call, result, config), (view, result)))
            order += 1
        if view.role not in ("user", "assistant"):
            continue
        day = reading.day_of(index)
        for sentence in sentences(view.text):
            short = len(sentence.split()) < _FACT_MIN_WORDS
            # A short sentence is a fact only when it holds a number or a date ("Deadline is
            # 2024-07-01."); without one it is a reply or an exclamation.
            if (short and not _DIGIT.search(sentence)) or is_greeting(sentence):
                continue
            relative = day is not None and has_relative_time(sentence)
            score = int(relative) + fact_score(sentence, reading.speaker_words)
            if score < 2 and view.role == "user" and is_preference_sentence(sentence):
                # The user's own preference is a fact about them, never a task constraint.
                score = max(score, 2)
            fact = sentence
            if day is not None and relative:
                # Who did what when: the time made absolute, and the day it was said.
                fact = f"{resolve_relative(sentence, day)} (said on {format_day(day)})"
            if view.speaker != "assistant":
                fact = f"{label(view)}: {fact}"
            statements.append((score if score >= 2 else 0, order, fact, view))
            order += 1
    return calls, statements


def _call_fact(call: ToolCallView, result: MessageView | None, config: ExtractorConfig) -> str:
    fact = call_summary(call.name, call.arguments, config.tool_fact_chars)
    if result is not None and result.text.strip():
        fact += f" → {result_summary(result.text, 100)}"
    return fact


def _is_statement(fact: str) -> bool:
    return not fact.endswith(("?", "？")) and len(fact.split()) >= _STATEMENT_MIN_WORDS


def fact_score(sentence: str, speaker_words: frozenset[str]) -> int:
    """How specific a sentence is: its distinct anchor-like tokens (names, numbers, amounts,
    backticked identifiers, decision words; never a speaker's name or a sentence opener), and
    one more if it holds a number. One pattern over the sentence: this runs for every sentence
    of every archive, where the full anchor scan of guard B would dominate a commit."""
    keys: set[str] = set()
    digits = _DIGIT.search(sentence) is not None
    pattern = _FACT_TOKEN
    if sentence.isascii():
        lowered = sentence.lower()
        decisions = any(word in lowered for word in DECISION_WORDS)
        pattern = _FACT_TOKEN_ASCII[digits, decisions]
    for token in pattern.findall(sentence):
        key = token.strip("`").lower()
        opener = token[0].isupper() and not _DIGIT.search(token)
        if opener and (not token[1:3].isalpha() or key in PROPER_NOUN_STOP_WORDS):
            continue
        if key not in speaker_words:
            keys.add(key)
    return len(keys) + (1 if digits else 0)


_PACK_SEPARATOR: Final = " | "
_DIGEST_PRIORITY: Final = {
    "decision": 0,
    "proper_noun": 1,
    "clock": 2,
    "quantity": 3,
    "version": 4,
    "identifier": 5,
    "amount": 6,
    "date": 7,
}


def _consolidate_facts(
    old: list[str], fresh: list[str], counter: TokenCounter, config: ExtractorConfig
) -> str:
    """A consolidation guard B accepts: pack older facts, then fold the oldest into a digest.

    Packing joins up to three older facts per line, which keeps every word and anchor. Only if
    the section is still over its token limit are the oldest lines folded into ``Earlier
    facts:``, which keeps their anchors (names, dates, amounts, identifiers) but not their
    wording; and only if that digest alone is too large are its least specific anchors dropped,
    never below a coverage comfortably above the guard's threshold.
    """
    digest: dict[str, tuple[str, str]] = {}
    plain: list[str] = []
    for item in old:
        if item.startswith(DIGEST_PREFIX):
            _fold(digest, item[len(DIGEST_PREFIX) :])
        else:
            plain.append(item)
    # Room for the fresh facts and for the digest lines that folding may add or lengthen.
    digest_lines = len(digest) // config.digest_anchors_per_line + 2
    target = max(1, config.key_facts_limit_items - len(fresh) - digest_lines)
    packed = _pack(plain, target)

    line_tokens = partial(_line_tokens, counter)

    def render() -> list[str]:
        entries = list(digest.values())
        size = config.digest_anchors_per_line
        lines = [
            f"{DIGEST_PREFIX} " + "; ".join(surface for surface, _ in entries[start : start + size])
            for start in range(0, len(entries), size)
        ]
        return [f"- {line}" for line in [*lines, *packed, *fresh]]

    def over(lines: list[str]) -> bool:
        # Line by line, each line counted once however often the loops render it, plus one
        # token per line break: never below the count of the whole text, so never over it.
        return sum(map(line_tokens, lines)) + len(lines) - 1 > config.key_facts_limit_tokens

    content = render()
    while packed and over(content):
        _fold(digest, packed.pop(0))
        content = render()
    old_anchors = lines_anchors(old)
    kept = lines_anchors([*packed, *fresh])
    # Least specific anchors first; ties keep the digest's order (sorted is stable).
    victims = sorted(digest, key=lambda key: _DIGEST_PRIORITY[digest[key][1]])
    for victim in victims:
        if not over(content):
            break
        remaining = (set(digest) - {victim}) | kept
        if old_anchors and len(old_anchors & remaining) * 4 < 3 * len(old_anchors):
            break
        del digest[victim]
        content = render()
    return "\n".join(content)


def _fold(digest: dict[str, tuple[str, str]], text: str) -> None:
    for span in _spans(text):
        digest.setdefault(span.key, (span.surface, span.kind))


@lru_cache(maxsize=8192)
def _line_tokens(counter: TokenCounter, line: str) -> int:
    """A line's tokens, kept: most lines of a full section are the same in the next batch."""
    return counter(line)


@lru_cache(maxsize=4096)
def _spans(text: str) -> tuple[AnchorSpan, ...]:
    """A text's anchors in order, kept: the digest's lines are folded again in every batch."""
    return tuple(anchor_spans(text))


def _pack(items: list[str], target: int) -> list[str]:
    lines = list(items)
    index = 0
    while len(lines) > target and index < len(lines) - 1:
        if lines[index].count(_PACK_SEPARATOR) < 2:
            lines[index] = lines[index] + _PACK_SEPARATOR + lines.pop(index + 1)
        else:
            index += 1
    return lines
