"""The order of search results and of recalled memories.

Owns the constants of the hybrid order — reciprocal rank fusion (``1 / (60 + rank)`` summed over
the vector and the full-text retriever), scores rounded to six digits before ``min_score`` cuts
them, ties broken by recency then id — which the search statement applies (``repository``), and
"newest first among conflicting ones" for recall. Pure; never fetches anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from app.memories.records import SearchHit

RRF_K: Final = 60
"""The constant of reciprocal rank fusion (Cormack et al., 2009): damps the head of each list."""
SCORE_DIGITS: Final = 6
"""A score is answered rounded, and ``min_score`` cuts that same value: a client re-using a score
as ``min_score`` gets that hit back."""


def newest_first_among_conflicts(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """The same hits, where memories stating the same slot (a category and attribute, such as a
    preference for one thing) are reordered newest first within the places they hold."""
    ordered = list(hits)
    groups: dict[tuple[str, str], list[int]] = {}
    for index, hit in enumerate(ordered):
        if hit.memory.slot is not None:
            groups.setdefault((hit.memory.category, hit.memory.slot), []).append(index)
    for places in groups.values():
        members = sorted(
            (ordered[index] for index in places),
            key=lambda hit: hit.memory.updated_at,
            reverse=True,
        )
        for index, hit in zip(places, members, strict=True):
            ordered[index] = hit
    return ordered
