"""What one candidate does to a user's stored memories: ADD, UPDATE or SUPERSEDE (DESIGN 9).

Owns the decision, given the stored memories that bear on it: a current memory with the same
slot and value, or one at least ``duplicate_similarity`` similar, is restated (UPDATE); a
preference or profile memory with the same slot and another value is contradicted (SUPERSEDE:
a new row, the old ones kept and marked), and a withdrawal (slot value ``not <value>``, "I no
longer live in Berlin") supersedes only the memories stating that value; otherwise ADD. Pure:
the write path loads and stores.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from app.memories.records import Candidate, Category, EventKind

DEFAULT_DUPLICATE_SIMILARITY: Final = 0.92
NOT_PREFIX: Final = "not "
"""A slot value that withdraws another ("not berlin" after "I no longer live in Berlin")."""
SLOTTED_CATEGORIES: Final = frozenset({Category.PREFERENCE, Category.PROFILE})
"""Categories whose slot values can contradict each other (DESIGN 9)."""


@dataclass(frozen=True, slots=True)
class Existing:
    """A current (not superseded) memory in the candidate's scope."""

    memory_id: uuid.UUID
    content: str
    slot: str | None
    slot_value: str | None
    similarity: float


@dataclass(frozen=True, slots=True)
class Change:
    """``target`` is the memory an UPDATE rewrites; ``superseded`` the memories a SUPERSEDE
    marks; ``reason`` says which rule decided (``new``, ``same_slot_value``,
    ``near_duplicate``, ``contradiction``), for the audit trail."""

    kind: EventKind
    target: Existing | None = None
    superseded: tuple[Existing, ...] = ()
    reason: str = "new"


def decide(
    candidate: Candidate,
    *,
    nearest: Existing | None,
    same_slot: Sequence[Existing],
    duplicate_similarity: float = DEFAULT_DUPLICATE_SIMILARITY,
) -> Change:
    """The change ``candidate`` makes. ``nearest`` is the most similar current memory of the same
    scope (tenant, user, category) and embedder; ``same_slot`` the current ones sharing its slot,
    newest first."""
    if candidate.slot is not None and candidate.category in SLOTTED_CATEGORIES:
        agreeing = [row for row in same_slot if row.slot_value == candidate.slot_value]
        if agreeing:
            return Change(EventKind.UPDATE, target=agreeing[0], reason="same_slot_value")
        value = candidate.slot_value or ""
        if value.startswith(NOT_PREFIX):
            # "I no longer live in Berlin" takes back Berlin, and says nothing of another city.
            withdrawn = value[len(NOT_PREFIX) :]
            taken_back = tuple(row for row in same_slot if row.slot_value == withdrawn)
            if taken_back:
                return Change(EventKind.SUPERSEDE, superseded=taken_back, reason="withdrawal")
        elif same_slot:
            return Change(EventKind.SUPERSEDE, superseded=tuple(same_slot), reason="contradiction")
    if nearest is not None and nearest.similarity >= duplicate_similarity:
        return Change(EventKind.UPDATE, target=nearest, reason="near_duplicate")
    return Change(EventKind.ADD)
