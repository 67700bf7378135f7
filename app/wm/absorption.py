"""Which items of a body took in the prior items it no longer holds (an UPDATE that merged them).

Owns the two ways an item absorbs a lost one (DESIGN 18): it holds the lost item's first 40
characters (a packed line), or, when the body's items together keep at least half of the lost
item's lexical anchors (a digest of names, dates and amounts spread over lines), it keeps one of
them. Pure; ``provenance`` gives each absorbing item the lost one's sources.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from app.wm.anchors import anchors
from app.wm.items import snippet


class Sourced(Protocol):
    @property
    def item(self) -> str: ...


Lost = TypeVar("Lost", bound=Sourced)


def absorbing(items: Sequence[str], gone: Sequence[Lost]) -> list[tuple[int, Lost]]:
    """Each (index of an item, lost prior item it absorbed), lost items in order.

    The body's anchors are indexed once (anchor → the items holding it), not intersected with
    every lost item's one item at a time.
    """
    lowered = [item.lower() for item in items]
    holders: dict[str, list[int]] | None = None
    pairs: list[tuple[int, Lost]] = []
    for entry in gone:
        wanted = anchors(entry.item)
        by_anchor: set[int] = set()
        if wanted:
            if holders is None:
                holders = {}
                for index, item in enumerate(items):
                    for anchor in anchors(item):
                        holders.setdefault(anchor, []).append(index)
            held = [anchor for anchor in wanted if anchor in holders]
            if len(held) * 2 >= len(wanted):
                by_anchor = {index for anchor in held for index in holders[anchor]}
        cut = snippet(entry.item)
        for index, item in enumerate(lowered):
            if index in by_anchor or cut in item:
                pairs.append((index, entry))
    return pairs
