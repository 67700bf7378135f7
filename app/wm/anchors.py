"""Lexical anchors of Key Facts (guard B) and meaningful words of a title (guard A).

Owns which words of a text count as facts worth keeping (dates, quantities, amounts, decision
words, proper nouns, versions, backticked identifiers) and which make two titles "the same
subject". Never compares documents or decides an op; the guards do that with these sets.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


MONTHS: Final = _words(
    "january february march april may june july august september october november december"
)

UNIT_WORDS: Final = _words(
    "year month week day hour minute mile time session round visit dollar euro pound kid "
    "bedroom painting person"
)
_IRREGULAR_UNITS: Final = ("children", "people")

DECISION_WORDS: Final = ("because", "decided", "chose", "committed", "agreed", "resolved")

# Capitalised words that open sentences or are function words: never proper nouns. The list is
# part of the documented behaviour of guard B (a word added here changes which consolidations
# pass), so it only grows with a note in the docs.
PROPER_NOUN_STOP_WORDS: Final[frozenset[str]] = frozenset(
    _words(
        """
    the this that these those there then than they them their theirs you your yours we our ours
    it its may also when what where which who whom whose why how and but for nor yet not with
    from into onto upon about after before during since until while although though however
    therefore thus hence here now just only even still some any all each every both either
    neither none many much more most few less least other another such same very too can could
    will would shall should might must has have had does did are was were been being yes let
    lets please thanks thank hello okay well sure great good nice she her hers his him himself
    herself myself yourself ourselves themselves itself one two three first second next last
    today tomorrow yesterday once if so maybe perhaps sorry wow hey yeah yep nope whoa oh
    aww haha cool awesome amazing really actually definitely absolutely totally honestly
    thankfully hopefully luckily unfortunately anyway gonna wanna gotta look looks remember
    note see make try check glad happy love like
    key facts decisions session working memory new old
    """
    )
)

TITLE_STOP_WORDS: Final[frozenset[str]] = frozenset(
    _words(
        """
        the a an and or of to in on for with by at from session title working memory plan plans
        notes note
        """
    )
)

_CJK_RANGES: Final = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003ffff"  # CJK extensions B and later
)
_CJK_RUN = re.compile(f"[{_CJK_RANGES}]+")

_ISO_DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)")
_LONG_DATE = re.compile(
    r"\b(\d{1,2})\s+(" + "|".join(MONTHS) + r"),?\s+(\d{4})\b",
    re.IGNORECASE,
)
_UNITS_PATTERN = "|".join([f"{unit}s?" for unit in UNIT_WORDS] + list(_IRREGULAR_UNITS))
_QUANTITY = re.compile(r"\b(\d+(?:[.,]\d+)*)\s+(" + _UNITS_PATTERN + r")\b", re.IGNORECASE)
_AMOUNT = re.compile(r"\$\d[\d,]*(?:\.\d+)?")
_CLOCK = re.compile(r"\b(\d{1,2}(?::\d{2})?)\s?([ap]m)\b", re.IGNORECASE)
_DECISION = re.compile(r"\b(" + "|".join(DECISION_WORDS) + r")\b", re.IGNORECASE)
# A word (a run of letters and digits) that does not start with a digit or an ASCII lower-case
# letter: the only candidates for a proper noun, found without visiting every word in Python.
_CAPITALISED = re.compile(r"(?<![^\W_])[^\W\d_a-z][^\W_]*")
# Not after a comma or a dollar sign: the decimals of "$1,200.50" are an amount, not a version.
_VERSION = re.compile(r"(?<![\w.,$])v?\d+(?:\.\d+)+(?![\w])")
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_ANY_DIGIT = re.compile(r"\d")

_TITLE_WORD = re.compile(r"[^\W\d_](?:[^\W_]|\.){2,}")
_DIGITS = re.compile(r"[0-9]+")


AnchorKind = Literal[
    "date", "quantity", "amount", "clock", "decision", "proper_noun", "version", "identifier"
]


@dataclass(frozen=True, slots=True)
class AnchorSpan:
    """One anchor occurrence: where, as written, its comparison key, and what kind it is."""

    position: int
    surface: str
    key: str
    kind: AnchorKind


def anchor_spans(text: str) -> list[AnchorSpan]:
    """Every anchor occurrence in text order."""
    found: list[AnchorSpan] = []
    # Dates, quantities, amounts, clock times and versions all hold a digit: a text without one
    # (most sentences) is not searched for them.
    numbers = _ANY_DIGIT.search(text) is not None
    if numbers:
        _number_spans(text, found)
    for match in _DECISION.finditer(text):
        word = match.group(0)
        found.append(AnchorSpan(match.start(), word, word.lower(), "decision"))
    for match in _CAPITALISED.finditer(text):
        word = match.group(0)
        if _is_proper_noun(word):
            found.append(AnchorSpan(match.start(), word, word.lower(), "proper_noun"))
    if numbers:
        for match in _VERSION.finditer(text):
            version = match.group(0)
            found.append(AnchorSpan(match.start(), version, version.lower(), "version"))
    if "`" in text:
        for match in _BACKTICKED.finditer(text):
            inner = match.group(1).strip()
            if inner:
                found.append(AnchorSpan(match.start(), match.group(0), inner.lower(), "identifier"))
    found.sort(key=lambda span: span.position)
    return found


def _number_spans(text: str, found: list[AnchorSpan]) -> None:
    for match in _ISO_DATE.finditer(text):
        found.append(AnchorSpan(match.start(), match.group(0), match.group(0), "date"))
    for match in _LONG_DATE.finditer(text):
        day, month, year = match.groups()
        key = f"{int(day)} {month.lower()} {year}"
        found.append(AnchorSpan(match.start(), match.group(0), key, "date"))
    for match in _QUANTITY.finditer(text):
        number, unit = match.groups()
        key = f"{number} {unit.lower()}"
        found.append(AnchorSpan(match.start(), match.group(0), key, "quantity"))
    for match in _AMOUNT.finditer(text):
        found.append(AnchorSpan(match.start(), match.group(0), match.group(0), "amount"))
    for match in _CLOCK.finditer(text):
        clock, half = match.groups()
        key = f"{clock} {half.lower()}"
        found.append(AnchorSpan(match.start(), match.group(0), key, "clock"))


@functools.lru_cache(maxsize=8192)
def anchors(text: str) -> frozenset[str]:
    """The lower-cased anchor set of DESIGN 3.5 B (plus versions and backticked identifiers).

    Cached: the same items are read again by every batch of an archive and by every guard."""
    return frozenset(span.key for span in anchor_spans(text))


# How a line may end so that an anchor runs on over the line break after it: a number (a
# quantity, a clock time, a date's day) or a month (a date's year on the next line); a blank
# line may lie inside such an anchor.
_RUNS_ON = re.compile(r"(?:\d|(?:" + "|".join(MONTHS) + r"),?)\Z", re.IGNORECASE)
_RUNS_ON_CHARS = len("september,")


def lines_anchors(lines: Sequence[str]) -> frozenset[str]:
    """``anchors`` of the lines joined by line breaks, from the anchors of each run of lines an
    anchor may span (most often one line; kept from one batch to the next): no anchor spans a
    line break after a line that does not run on, and such a break reads as the text's end."""
    found: set[str] = set()
    start = 0
    for index, line in enumerate(lines):
        if index == len(lines) - 1 or not _runs_on(line):
            found |= anchors("\n".join(lines[start : index + 1]))
            start = index + 1
    return frozenset(found)


def _runs_on(line: str) -> bool:
    tail = line.rstrip()
    return not tail or _RUNS_ON.search(tail, max(0, len(tail) - _RUNS_ON_CHARS)) is not None


def _is_proper_noun(word: str) -> bool:
    return (
        len(word) >= 3
        and word[0].isupper()
        and word[1:3].isalpha()
        and word.lower() not in PROPER_NOUN_STOP_WORDS
    )


def title_words(title: str) -> frozenset[str]:
    """Meaningful words of a title (DESIGN 3.7 A): words, digit runs, CJK bigrams, no stop-words."""
    words: set[str] = set()
    latin = _CJK_RUN.sub(" ", title)
    for match in _TITLE_WORD.finditer(latin):
        word = match.group(0).rstrip(".").lower()
        if len(word) >= 3:
            words.add(word)
    words.update(match.group(0) for match in _DIGITS.finditer(title))
    for match in _CJK_RUN.finditer(title):
        run = match.group(0)
        words.update(run[index : index + 2] for index in range(len(run) - 1))
    return frozenset(word for word in words if word not in TITLE_STOP_WORDS)
