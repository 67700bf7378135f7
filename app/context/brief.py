"""The brief of a reduced summary: the ids, names and numbers of what the context leaves out.

Pure. Owns what a specific term is — ids, codes, numbers, dates, paths, then names — and the one
line that lists them, each once, leaving out those the summary or the raw messages sent beside
it already hold. ``summary`` decides which terms (those of the messages a filled context's
summary displaces, then those of its cut items) and the room. A cut item or a displaced message
is then still findable by its exact values: what a model cannot reconstruct from anything else
in the context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

from app.wm.tokens import TokenCounter

BRIEF_OPEN: Final = "[in brief, ids, names and numbers of what this context leaves out: "
BRIEF_CLOSE: Final = "]"

_TOKEN: Final = re.compile(r"[\w][\w./@:+-]*[\w]|[\w]")
_UPPER_CODE: Final = re.compile(r"[A-Z]{3,}")
_NAME: Final = re.compile(r"[A-Z][a-z]{2,}")
_WORD: Final = re.compile(r"[\w][\w./@:+-]*[\w]|[\w]")


def _is_id(term: str) -> bool:
    """A term no paraphrase keeps, of two characters or more: a digit, an underscore, a path or
    address separator, or an upper-case code of three letters or more (``JFK``)."""
    return len(term) >= 2 and (
        any(c.isdigit() for c in term)
        or any(c in "_/@" for c in term)
        or ("." in term and not term.endswith("."))
        or _UPPER_CODE.fullmatch(term) is not None
    )


def specific_terms(text: str) -> tuple[list[str], list[str]]:
    """The ids and the names of ``text``, in order of appearance, each once. A name is a
    capitalised word of three letters or more that does not open a sentence or an item."""
    ids: list[str] = []
    names: list[str] = []
    seen: set[str] = set()
    for line in text.splitlines():
        opening = True
        for match in _TOKEN.finditer(line):
            term = match.group(0)
            key = term.lower()
            before = line[: match.start()].rstrip()
            sentence_start = opening or before.endswith((".", "!", "?", ":", "-", "|"))
            opening = False
            if key in seen:
                continue
            if _is_id(term):
                ids.append(term)
                seen.add(key)
            elif _NAME.fullmatch(term) and not sentence_start:
                names.append(term)
                seen.add(key)
    return ids, names


def shown_words(texts: Iterable[str]) -> frozenset[str]:
    """The lower-cased words of what is already in the context, to leave out of a brief."""
    return frozenset(
        word.lower() for text in texts for word in _WORD.findall(text) if len(word) > 0
    )


def brief_terms(cut_items: Sequence[str], shown: frozenset[str]) -> list[str]:
    """The terms a brief of ``cut_items`` (most important first) lists: every id of every
    item, then every name, each once, without what ``shown`` holds."""
    ids: list[str] = []
    names: list[str] = []
    seen: set[str] = set(shown)
    for item in cut_items:
        item_ids, item_names = specific_terms(item)
        for term in item_ids:
            if term.lower() not in seen:
                seen.add(term.lower())
                ids.append(term)
        for term in item_names:
            if term.lower() not in seen:
                seen.add(term.lower())
                names.append(term)
    return [*ids, *names]


def brief_line(terms: Sequence[str]) -> str:
    return f"{BRIEF_OPEN}{'; '.join(terms)}{BRIEF_CLOSE}"


def fit_brief(terms: Sequence[str], room: int, counter: TokenCounter) -> tuple[str, int, int]:
    """The brief line of the most leading ``terms`` that fits ``room`` tokens (with the blank
    line before it): its text, tokens and how many terms it lists; ``("", 0, 0)`` when not
    even one fits."""
    if not terms or room <= 0:
        return "", 0, 0
    low, high = 0, len(terms)
    while low < high:
        middle = (low + high + 1) // 2
        if counter("\n\n" + brief_line(terms[:middle])) <= room:
            low = middle
        else:
            high = middle - 1
    if low == 0:
        return "", 0, 0
    line = brief_line(terms[:low])
    return line, counter("\n\n" + line), low
