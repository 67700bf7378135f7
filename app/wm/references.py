"""Message references of a working-memory item: the trailing ``(#12, #15)`` a model writes.

Owns the grammar (one parenthesised group of ``#<seq>`` at the end of the item, outside code
spans), the range check (only messages the archive and its prior cover count), and how a set
of seqs is written back as a reference. Never decides what an item's sources are beyond its own
text: ``provenance`` combines these with the prior's sources.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

Seqs = tuple[int, ...]

# Written without nested optional whitespace, so no input makes the search backtrack
# quadratically (a model controls this text).
_TRAILING: Final = re.compile(
    r"\(\s*(#\d{1,18}(?:(?:\s*[,;]\s*|\s+)#\d{1,18})*)\s*(?:[,;]\s*)?\)\s*(?:[.;,]\s*)?$"
)
_SEQ: Final = re.compile(r"#(\d{1,18})")
MAX_SEQS_PER_ITEM: Final = 100
"""An item keeps at most this many sources (the newest): a line that consolidates a long
history would otherwise accumulate every message it ever came from."""


@dataclass(frozen=True, slots=True)
class SeqRange:
    """Seqs ``first..last`` (both included): the messages a reference may name."""

    first: int
    last: int

    def __contains__(self, seq: object) -> bool:
        return isinstance(seq, int) and self.first <= seq <= self.last


@dataclass(frozen=True, slots=True)
class Cited:
    """An item read for its reference: the text without it, the seqs in range (sorted, once
    each), and the ones outside the range (dropped)."""

    text: str
    seqs: Seqs = ()
    outside: Seqs = ()


def normalised_seqs(seqs: Iterable[int]) -> Seqs:
    """Sorted, each once, at most ``MAX_SEQS_PER_ITEM`` of them (the newest)."""
    return tuple(sorted(set(seqs)))[-MAX_SEQS_PER_ITEM:]


def cite(item: str, allowed: SeqRange) -> Cited:
    """Split the trailing reference off ``item``; an item without one is returned as it is.

    The reference is the item's last parenthesised group when it holds only ``#<number>``
    entries separated by commas, semicolons or spaces; one inside a code span (an odd number of
    backticks before it) is text. References outside ``allowed`` are stripped and reported,
    never kept.
    """
    match = _TRAILING.search(item)
    if match is None or item.count("`", 0, match.start()) % 2:
        return Cited(item)
    named = {int(number) for number in _SEQ.findall(match.group(1))}
    inside = normalised_seqs(seq for seq in named if seq in allowed)
    outside = tuple(sorted(seq for seq in named if seq not in allowed))
    return Cited(item[: match.start()].rstrip(), inside, outside)


def reference(seqs: Iterable[int]) -> str:
    """``(#12, #15)``, or "" for no seqs."""
    listed = normalised_seqs(seqs)
    return "(" + ", ".join(f"#{seq}" for seq in listed) + ")" if listed else ""


def with_reference(item: str, seqs: Iterable[int]) -> str:
    """The item with its reference appended (unchanged without seqs)."""
    written = reference(seqs)
    return f"{item} {written}" if written else item
