"""An archive's memory decisions for the whole batch at once, as one candidate after another.

Owns replaying, in memory, what deciding each candidate against the stored memories one by one
would see: the stored memories as one lookup found them, changed by the earlier candidates of the
batch (a restated memory now holds that candidate's wording and vector, a superseded one is gone,
an added one is there), with the similarity of two candidates' vectors as the database computed
it. Each decision is ``changes.decide``'s; the result is the final state of every row the batch
touched, for a fixed number of writes. Pure: ``jobs`` looks up and writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from app.memories.changes import SLOTTED_CATEGORIES, Change, Existing, decide
from app.memories.records import Candidate


@dataclass(frozen=True, slots=True)
class Stored:
    """A stored memory as a candidate's lookup found it; ``distance`` is the cosine distance to
    that candidate's vector (``None``: made by another embedder)."""

    memory_id: uuid.UUID
    content: str
    slot: str | None
    slot_value: str | None
    updated_at: datetime
    distance: float | None


@dataclass(slots=True)
class Found:
    """One candidate's lookup: its nearest stored memories (closest first, at most ``depth``:
    more may exist when it is full) and every stored memory sharing its slot."""

    depth: int
    nearest: list[Stored] = field(default_factory=list)
    same_slot: list[Stored] = field(default_factory=list)


class NeedMore(Exception):
    """Every stored memory the lookup found for candidate ``index`` was changed by the batch:
    the next nearest ones, leaving out ``changed``, are needed (``Batch.more``)."""

    def __init__(self, index: int, changed: frozenset[uuid.UUID]) -> None:
        super().__init__(index)
        self.index = index
        self.changed = changed


@dataclass(slots=True)
class Row:
    """A memory the batch wrote, as it now stands. ``holds`` is the candidate whose vector it
    holds; ``values`` the columns that candidate set (``None``: a stored row only superseded)."""

    memory_id: uuid.UUID
    content: str
    slot: str | None
    slot_value: str | None
    holds: int
    inserted: bool
    values: dict[str, Any] | None = None
    confidence: float = 0.0
    days: int | None = None
    superseded_by: uuid.UUID | None = None
    visible: bool = True


class Batch:
    """The decisions of ``candidates`` in order, for one user and embedder. ``distance(i, j)``
    is the cosine distance of candidates ``i`` and ``j`` (same category), ``now`` the
    transaction's time (the ``updated_at`` of every row it writes)."""

    def __init__(
        self,
        candidates: Sequence[Candidate],
        found: Mapping[int, Found],
        distances: Mapping[tuple[int, int], float],
        now: datetime,
    ) -> None:
        self.candidates = candidates
        self.found = dict(found)
        self.distances = distances
        self.now = now
        self.rows: dict[str, dict[uuid.UUID, Row]] = {}

    def more(self, index: int, rows: Sequence[Stored]) -> None:
        """The next nearest stored memories of candidate ``index`` (after a ``NeedMore``)."""
        found = self.found[index]
        found.nearest = [*found.nearest, *rows]
        found.depth = len(found.nearest) + (1 if len(rows) >= found.depth else 0)

    def _distance(self, row: Row, index: int) -> float:
        if row.holds == index:
            return 0.0
        return self.distances[(min(row.holds, index), max(row.holds, index))]

    def lookups(self, index: int) -> tuple[Existing | None, list[Existing]]:
        """What the database would answer for candidate ``index`` now: the nearest current
        memory of its category, and the current ones sharing its slot, newest first."""
        candidate = self.candidates[index]
        found = self.found[index]
        written = self.rows.setdefault(candidate.category.value, {})
        best: tuple[float, Existing] | None = None
        for stored in found.nearest:
            if stored.memory_id in written or stored.distance is None:
                continue
            best = (stored.distance, _existing(stored, stored.distance))
            break
        else:
            if len(found.nearest) >= found.depth:
                raise NeedMore(index, frozenset(written))
        for row in written.values():
            if not row.visible:
                continue
            distance = self._distance(row, index)
            if best is None or distance < best[0]:
                best = (distance, _written(row, distance))
        same_slot: list[tuple[datetime, uuid.UUID, Existing]] = []
        if candidate.slot is not None and candidate.category in SLOTTED_CATEGORIES:
            same_slot = [
                (stored.updated_at, stored.memory_id, _existing(stored, stored.distance))
                for stored in found.same_slot
                if stored.memory_id not in written
            ]
            same_slot += [
                (self.now, row.memory_id, _written(row, self._distance(row, index)))
                for row in written.values()
                if row.visible and row.slot == candidate.slot
            ]
            # As the database orders them: newest first, then by id.
            same_slot.sort(key=lambda entry: entry[1])
            same_slot.sort(key=lambda entry: entry[0], reverse=True)
        return (None if best is None else best[1]), [entry[2] for entry in same_slot]

    def decide(self, index: int, duplicate_similarity: float) -> tuple[Change, Existing | None]:
        """Candidate ``index``'s change and the nearest memory it was decided against."""
        nearest, same_slot = self.lookups(index)
        change = decide(
            self.candidates[index],
            nearest=nearest,
            same_slot=same_slot,
            duplicate_similarity=duplicate_similarity,
        )
        return change, nearest

    def apply(
        self, index: int, change: Change, values: dict[str, Any], days: int | None
    ) -> uuid.UUID:
        """Record candidate ``index``'s change (``values``: its columns, ``days``: the lifetime
        of its category); returns the memory it restated or added."""
        candidate = self.candidates[index]
        written = self.rows.setdefault(candidate.category.value, {})
        alive = days is None or days > 0
        if change.target is not None:
            row = written.get(change.target.memory_id) or _from_stored(change.target)
            row.content, row.slot, row.slot_value = (
                candidate.content,
                candidate.slot,
                candidate.slot_value,
            )
            row.holds, row.values, row.days = index, values, days
            row.confidence = max(row.confidence, candidate.confidence)
            row.visible = alive if days is not None else row.visible
            written[row.memory_id] = row
            return row.memory_id
        memory_id = uuid.uuid4()
        written[memory_id] = Row(
            memory_id,
            candidate.content,
            candidate.slot,
            candidate.slot_value,
            index,
            inserted=True,
            values=values,
            confidence=candidate.confidence,
            days=days,
            visible=alive,
        )
        for old in change.superseded:
            row = written.get(old.memory_id) or _from_stored(old)
            row.superseded_by, row.visible = memory_id, False
            written[row.memory_id] = row
        return memory_id

    def written(self) -> list[tuple[str, Row]]:
        """Every row the batch wrote, with its category."""
        return [(category, row) for category, rows in self.rows.items() for row in rows.values()]


def _existing(stored: Stored, distance: float | None) -> Existing:
    similarity = 0.0 if distance is None else 1.0 - distance
    return Existing(stored.memory_id, stored.content, stored.slot, stored.slot_value, similarity)


def _written(row: Row, distance: float) -> Existing:
    return Existing(row.memory_id, row.content, row.slot, row.slot_value, 1.0 - distance)


def _from_stored(existing: Existing) -> Row:
    # A stored row first changed now: its confidence is the stored one (the write keeps the
    # greater), its vector the stored one until a candidate restates it.
    return Row(
        existing.memory_id,
        existing.content,
        existing.slot,
        existing.slot_value,
        holds=-1,
        inserted=False,
    )
