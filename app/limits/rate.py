"""The rate rule: messages per minute per tenant, as a generic cell rate (GCRA). Pure.

Each tenant has one timestamp, the theoretical arrival time of its next message; a tenant may
run ahead of it by one minute's worth, so a full minute's messages may come at once and then
one every ``60 / per_minute`` seconds. Time is passed in, never read here.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

WINDOW_S = 60.0


@dataclass(slots=True)
class MessageRate:
    """``per_minute`` messages per minute for each key (a tenant); ``take`` books them."""

    per_minute: int
    _next_at: dict[Hashable, float] = field(default_factory=dict)

    @property
    def interval_s(self) -> float:
        return WINDOW_S / self.per_minute

    def take(self, key: Hashable, count: int, now: float) -> float | None:
        """Book ``count`` messages at ``now``; ``None`` when allowed, else how many seconds to
        wait before they would be (nothing is booked then)."""
        start = max(self._next_at.get(key, now), now)
        after = start + count * self.interval_s
        ahead = after - now
        if ahead > WINDOW_S:
            return ahead - WINDOW_S
        self._next_at[key] = after
        if len(self._next_at) > 100_000:
            self._forget_idle(now)
        return None

    def _forget_idle(self, now: float) -> None:
        """Keys whose next time has passed are at rest: forgetting them changes nothing."""
        for key in [key for key, at in self._next_at.items() if at <= now]:
            del self._next_at[key]
