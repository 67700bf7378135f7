"""Memory policy: which memory a session's archives may produce, per session and per user.

Owns the three switches (working memory, long-term extraction, allowed memory categories), reading
them from a request body with a clear error for anything else, and resolving a session's own
policy over its user's default, field by field, with everything on when neither says otherwise.
Pure; never loads or stores a policy and never decides what an archive job does with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

from app.memories.records import Candidate, Category

WORKING_MEMORY: Final = "working_memory"
LONG_TERM_EXTRACTION: Final = "long_term_extraction"
MEMORY_TYPES: Final = "memory_types"
FIELDS: Final = (WORKING_MEMORY, LONG_TERM_EXTRACTION, MEMORY_TYPES)
ALL_TYPES: Final = frozenset(Category)


class PolicyError(ValueError):
    """A policy body that cannot be stored; ``field`` names the offending key."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class MemoryPolicy:
    """A policy as set on a session or a user; ``None`` means "not set here"."""

    working_memory: bool | None = None
    long_term_extraction: bool | None = None
    memory_types: frozenset[Category] | None = None

    def to_json(self) -> dict[str, object]:
        """The stored and returned form: only the fields that are set, types sorted."""
        out: dict[str, object] = {}
        if self.working_memory is not None:
            out[WORKING_MEMORY] = self.working_memory
        if self.long_term_extraction is not None:
            out[LONG_TERM_EXTRACTION] = self.long_term_extraction
        if self.memory_types is not None:
            out[MEMORY_TYPES] = sorted(t.value for t in self.memory_types)
        return out


@dataclass(frozen=True)
class EffectivePolicy:
    """What an archive job obeys: every field decided."""

    working_memory: bool
    long_term_extraction: bool
    memory_types: frozenset[Category]

    def allows(self, category: Category) -> bool:
        return self.long_term_extraction and category in self.memory_types


EVERYTHING: Final = EffectivePolicy(True, True, ALL_TYPES)


def parse_policy(raw: object) -> MemoryPolicy:
    """Read a policy body; ``PolicyError`` for unknown keys, wrong types or unknown categories.

    A key given as ``null`` is the same as a key left out (the field is not set). An empty
    ``memory_types`` list is refused: turning extraction off is what ``long_term_extraction``
    is for, and an empty list would be a second, easily mistaken way to say it.
    """
    if not isinstance(raw, Mapping):
        raise PolicyError("memory_policy", "must be an object")
    unknown = sorted(str(key) for key in raw if key not in FIELDS)
    if unknown:
        raise PolicyError(unknown[0], f"unknown field; expected one of {', '.join(FIELDS)}")
    return MemoryPolicy(
        working_memory=_flag(raw, WORKING_MEMORY),
        long_term_extraction=_flag(raw, LONG_TERM_EXTRACTION),
        memory_types=_types(raw.get(MEMORY_TYPES)),
    )


def _flag(raw: Mapping[object, object], field: str) -> bool | None:
    value = raw.get(field)
    if value is None or isinstance(value, bool):
        return value
    raise PolicyError(field, "must be true, false or null")


def _types(value: object) -> frozenset[Category] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise PolicyError(MEMORY_TYPES, "must be a non-empty list of memory categories")
    known = {c.value: c for c in Category}
    chosen: set[Category] = set()
    for item in value:
        if not isinstance(item, str) or item not in known:
            raise PolicyError(
                MEMORY_TYPES, f"unknown category {item!r}; expected one of {', '.join(known)}"
            )
        chosen.add(known[item])
    return frozenset(chosen)


def resolve(session: MemoryPolicy | None, user: MemoryPolicy | None) -> EffectivePolicy:
    """The session's own fields win; its user's default fills the rest; then everything is on."""
    layers = [p for p in (session, user) if p is not None]
    working = next((p.working_memory for p in layers if p.working_memory is not None), True)
    extraction = next(
        (p.long_term_extraction for p in layers if p.long_term_extraction is not None), True
    )
    types = next((p.memory_types for p in layers if p.memory_types is not None), ALL_TYPES)
    return EffectivePolicy(working, extraction, types)


C = TypeVar("C", bound=Candidate)


def keep(policy: EffectivePolicy, candidates: Iterable[C]) -> Sequence[C]:
    """The candidates the policy lets be stored, in their order."""
    return [c for c in candidates if policy.allows(c.category)]
