"""Per-tenant message rate of one process, checked before a write.

The rate is exact per process (``rate.MessageRate``); with N processes a tenant may reach N
times it. Quotas are not kept here: the database checks and records them in the same step as
the write (the append statement, the creating transaction), so they hold across processes.
Each refusal is a 429 with ``Retry-After``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from app.config import Settings
from app.errors import PayloadTooLarge, RateLimited
from app.limits.rate import MessageRate
from app.metrics import LIMITED


@dataclass(frozen=True, slots=True)
class LimitConfig:
    """0 switches the rate off (the default)."""

    messages_per_minute: int = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> LimitConfig:
        return cls(messages_per_minute=settings.rate_messages_per_minute)


@dataclass(slots=True)
class TenantLimits:
    config: LimitConfig
    clock: Callable[[], float] = time.monotonic
    _rate: MessageRate | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.config.messages_per_minute:
            self._rate = MessageRate(self.config.messages_per_minute)

    def check_rate(self, tenant_id: uuid.UUID, messages: int) -> None:
        """429 when ``messages`` more would exceed the tenant's rate (nothing booked then)."""
        if self._rate is None:
            return
        per_minute = self.config.messages_per_minute
        if messages > per_minute:
            raise PayloadTooLarge(
                f"{messages} messages at once is more than this tenant's {per_minute} a minute"
            )
        wait_s = self._rate.take(tenant_id, messages, self.clock())
        if wait_s is not None:
            LIMITED.labels("messages_per_minute").inc()
            raise RateLimited(
                f"this tenant may append {per_minute} messages a minute; retry in {wait_s:.1f} s",
                retry_after_s=wait_s,
            )
