"""What a tenant's retention policy may say, and what it means. Pure.

Owns the limits (days, from one to a hundred years; none: keep forever), the checks a policy
must pass before it is stored, and the reading of a stored policy: whether any of it is on, the
lifetime of a new memory of a category, how many of each kind one pass may delete. Never reads
the clock or the database: cut-offs are computed by Postgres from ``now()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from app.memories.records import Category

MIN_DAYS: Final = 1
"""A limit of 0 days would purge at once what was just written: refused, and ``null`` (off) is
the way to say "keep"."""
MAX_DAYS: Final = 36_500
"""A hundred years: past it Postgres's date arithmetic gains nothing and a typo (an extra zero
or three) is more likely than intent."""
MIN_BATCH: Final = 1
MAX_BATCH: Final = 100_000


class PolicyError(ValueError):
    """A limit the policy may not hold; the message says which and why."""


def check_days(days: int | None, name: str) -> int | None:
    """``days`` when it is a valid limit (or ``None``: off); else ``PolicyError``."""
    if days is None:
        return None
    if isinstance(days, bool) or not isinstance(days, int):
        raise PolicyError(f"{name} must be a whole number of days or null")
    if days < MIN_DAYS:
        raise PolicyError(f"{name} must be at least {MIN_DAYS} day (null turns it off); got {days}")
    if days > MAX_DAYS:
        raise PolicyError(f"{name} must be at most {MAX_DAYS} days (100 years); got {days}")
    return days


def check_memory_days(memory_days: Mapping[str, int]) -> dict[str, int]:
    """Per-category lifetimes of new memories: known categories, valid limits."""
    known = {category.value for category in Category}
    checked: dict[str, int] = {}
    for category, days in memory_days.items():
        if category not in known:
            raise PolicyError(
                f"memory_days: unknown category {category!r} (one of {', '.join(sorted(known))})"
            )
        valid = check_days(days, f"memory_days.{category}")
        if valid is not None:
            checked[category] = valid
    return checked


def check_batch(batch: int) -> int:
    """How many rows of one kind a pass may delete per tenant."""
    if isinstance(batch, bool) or not MIN_BATCH <= batch <= MAX_BATCH:
        raise PolicyError(f"the batch must be between {MIN_BATCH} and {MAX_BATCH}; got {batch}")
    return batch


@dataclass(frozen=True, slots=True)
class Retention:
    """A tenant's policy; every limit off by default."""

    archive_messages_days: int | None = None
    idle_session_days: int | None = None
    memory_days: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def checked(
        cls,
        *,
        archive_messages_days: int | None = None,
        idle_session_days: int | None = None,
        memory_days: Mapping[str, int] | None = None,
    ) -> Retention:
        return cls(
            archive_messages_days=check_days(archive_messages_days, "archive_messages_days"),
            idle_session_days=check_days(idle_session_days, "idle_session_days"),
            memory_days=check_memory_days(memory_days or {}),
        )

    @property
    def is_off(self) -> bool:
        return (
            self.archive_messages_days is None
            and self.idle_session_days is None
            and not self.memory_days
        )

    def memory_lifetime_days(self, category: str) -> int | None:
        """Days a new memory of ``category`` lives, or ``None``: it never expires."""
        return self.memory_days.get(category)
