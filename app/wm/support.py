"""Whether a text supports an item: content words, their overlap, and a constraint's polarity.

Owns the words that carry an item's meaning (beyond stop-words and constraint keywords), the
overlap threshold a cited message must reach to support an item, and when two constraints say
opposite things about the same subject ("always X" / "never X", "use X" / "don't use X", "must" /
"must not"). Pure; never marks or restores anything: provenance and the source guard do that.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Final, Literal

from app.wm.anchors import PROPER_NOUN_STOP_WORDS, TITLE_STOP_WORDS

SUPPORT_MIN_OVERLAP: Final = 0.5
"""An item is supported by a text when at least half of its content words occur in it."""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CONSTRAINT_KEYWORDS: Final = _words(
    """
    must never always don't dont not only require requires required forbid forbids forbidden
    longer prefer prefers preferred instead avoid avoids use using used should shall stop
    allowed allow ever keep goal
    """
)
_EXTRA_STOP_WORDS: Final = _words(
    """
    a an is be to of in on at by as or if it i me my we us you your are was were am do does
    done did can cannot can't won't isn't aren't wasn't ok per via get got set put go going
    """
)
STOP_WORDS: Final[frozenset[str]] = (
    PROPER_NOUN_STOP_WORDS | TITLE_STOP_WORDS | _EXTRA_STOP_WORDS | _CONSTRAINT_KEYWORDS
)
_WORD: Final = re.compile(r"[^\W_](?:[^\s,;:!?()\[\]{}\"`“”]*[^\W_])?")


@functools.lru_cache(maxsize=8192)
def content_words(text: str) -> frozenset[str]:
    """The words of a text that carry its meaning: lower-cased, stop-words and constraint
    keywords left out; a path or a dotted name (``app/a.py``, ``3.8``) is one word."""
    found = set()
    for match in _WORD.finditer(text.lower()):
        word = match.group(0).replace("’", "'")
        if word not in STOP_WORDS and (len(word) > 1 or word.isdigit()):
            found.add(word)
    return frozenset(found)


def overlap(item: str, texts: Iterable[str]) -> float:
    """The share of the item's content words found among those of ``texts`` (1.0 when the
    item has none: there is nothing it could make up)."""
    wanted = content_words(item)
    if not wanted:
        return 1.0
    found: set[str] = set()
    for text in texts:
        found |= content_words(text)
    return len(wanted & found) / len(wanted)


def supported(item: str, texts: Iterable[str]) -> bool:
    return overlap(item, texts) >= SUPPORT_MIN_OVERLAP


Polarity = Literal[-1, 0, 1]

_NEGATIVE: Final = re.compile(
    r"(?<![\w'’])(?:never|don['’]?t|do\s+not|does\s+not|doesn['’]t|must\s+not|mustn['’]t|"
    r"should\s+not|shouldn['’]t|cannot|can['’]t|no\s+longer|avoid|forbid(?:s|den)?|"
    r"not\s+allowed|stop)(?![\w'’])|不要|禁止|不许",
    re.IGNORECASE,
)
_POSITIVE: Final = re.compile(
    r"(?<![\w'’])(?:always|must|use|only|require[sd]?|should|prefer(?:s|red)?)(?![\w'’])|"
    r"必须|务必|只能|只用",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=16384)
def polarity(text: str) -> Polarity:
    """-1 for a prohibition, 1 for a requirement, 0 for neither."""
    if _NEGATIVE.search(text):
        return -1
    if _POSITIVE.search(text):
        return 1
    return 0


def opposes(item: str, other: str) -> bool:
    """Whether two constraints say opposite things about the same subject: opposite polarities,
    and each holds at least ``SUPPORT_MIN_OVERLAP`` of the other's content words."""
    mine, theirs = polarity(item), polarity(other)
    if mine == 0 or theirs == 0 or mine == theirs:
        return False
    return overlap(item, [other]) >= SUPPORT_MIN_OVERLAP and overlap(other, [item]) >= (
        SUPPORT_MIN_OVERLAP
    )


def inverts(item: str, source: str) -> bool:
    """Whether an item says the opposite of a source sentence: opposite polarities, and the
    sentence holds at least ``SUPPORT_MIN_OVERLAP`` of the item's content words (the sentence
    may say more)."""
    mine, theirs = polarity(item), polarity(source)
    return mine * theirs == -1 and overlap(item, [source]) >= SUPPORT_MIN_OVERLAP


def same_claim(item: str, other: str) -> bool:
    """Whether ``other`` says what ``item`` says: the same polarity and at least
    ``SUPPORT_MIN_OVERLAP`` of the item's content words (a paraphrase, not an inversion)."""
    return polarity(item) == polarity(other) and overlap(item, [other]) >= SUPPORT_MIN_OVERLAP
