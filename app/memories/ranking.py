"""Hybrid ranking: reciprocal rank fusion of the vector and full-text candidates, and the order
recalled memories are shown in.

Owns the fused order (``1 / (60 + rank)`` summed over the two retrievers, ties broken by
recency, then id, so results are deterministic), the ``min_score`` cut (on cosine similarity),
and "newest first among conflicting ones". Pure; the repository fetches the candidates.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from app.memories.records import SearchHit, StoredMemory

RRF_K: Final = 60
"""The constant of reciprocal rank fusion (Cormack et al., 2009): damps the head of each list."""
SCORE_DIGITS: Final = 6


@dataclass(frozen=True, slots=True)
class Candidates:
    """What the two retrievers returned, each best first, with every candidate's similarity."""

    vector: Sequence[uuid.UUID]
    text: Sequence[uuid.UUID]
    memories: Mapping[uuid.UUID, StoredMemory]
    similarity: Mapping[uuid.UUID, float]


def fuse(candidates: Candidates, *, min_score: float, limit: int) -> list[SearchHit]:
    """The hits at or above ``min_score`` (cosine similarity), best fused rank first."""
    vector_rank = {memory_id: rank for rank, memory_id in enumerate(candidates.vector, start=1)}
    text_rank = {memory_id: rank for rank, memory_id in enumerate(candidates.text, start=1)}
    hits: list[SearchHit] = []
    for memory_id in {*vector_rank, *text_rank}:
        # The cut applies to the score as answered, so a client re-using a score as min_score
        # gets that hit back.
        score = round(candidates.similarity[memory_id], SCORE_DIGITS)
        if score < min_score:
            continue
        ranks = (vector_rank.get(memory_id), text_rank.get(memory_id))
        fused = sum(1.0 / (RRF_K + rank) for rank in ranks if rank is not None)
        hits.append(SearchHit(candidates.memories[memory_id], score, *ranks, round(fused, 8)))
    hits.sort(
        key=lambda hit: (-hit.fused, -hit.memory.updated_at.timestamp(), str(hit.memory.memory_id))
    )
    return hits[:limit]


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
