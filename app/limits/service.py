"""Per-tenant limits of one process: the message rate and the quotas, checked before a write.

The rate is exact per process (``rate.MessageRate``). Quotas are checked against the tenant's
usage as last read (a sum over its agent-session rows, at most every ``refresh_s``) plus what
this process has added since; with several processes a tenant can overshoot a quota by what the
others add within one refresh. Reading usage is one tenant transaction; nothing here holds one.
Each refusal is a 429 with ``Retry-After``.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from app.config import Settings
from app.db import Database
from app.errors import PayloadTooLarge, QuotaExceeded, RateLimited
from app.limits.rate import WINDOW_S, MessageRate
from app.metrics import LIMITED
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal


@dataclass(frozen=True, slots=True)
class LimitConfig:
    """0 switches a limit off (the default for each)."""

    messages_per_minute: int = 0
    stored_bytes: int = 0
    agent_sessions: int = 0
    refresh_s: float = 10.0

    @classmethod
    def from_settings(cls, settings: Settings) -> LimitConfig:
        return cls(
            messages_per_minute=settings.rate_messages_per_minute,
            stored_bytes=settings.quota_stored_bytes,
            agent_sessions=settings.quota_agent_sessions,
            refresh_s=settings.quota_refresh_s,
        )


@dataclass(slots=True)
class _Usage:
    read_at: float
    stored_bytes: int
    agent_sessions: int


@dataclass(slots=True)
class TenantLimits:
    config: LimitConfig
    clock: Callable[[], float] = time.monotonic
    _rate: MessageRate | None = field(init=False, default=None)
    _usage: dict[uuid.UUID, _Usage] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        if self.config.messages_per_minute:
            self._rate = MessageRate(self.config.messages_per_minute)

    @property
    def quotas(self) -> bool:
        return bool(self.config.stored_bytes or self.config.agent_sessions)

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

    async def check_quotas(
        self,
        database: Database,
        principal: Principal,
        *,
        new_bytes: int = 0,
        new_sessions: int = 0,
    ) -> None:
        """429 when the write would take the tenant past a quota."""
        if not self.quotas:
            return
        usage = await self._current(database, principal)
        if (
            self.config.stored_bytes
            and new_bytes
            and usage.stored_bytes + new_bytes > self.config.stored_bytes
        ):
            LIMITED.labels("stored_bytes").inc()
            raise QuotaExceeded(
                f"this tenant stores {usage.stored_bytes} bytes of messages; {new_bytes} more "
                f"would pass its quota of {self.config.stored_bytes}",
                retry_after_s=WINDOW_S,
            )
        if (
            self.config.agent_sessions
            and new_sessions
            and usage.agent_sessions + new_sessions > self.config.agent_sessions
        ):
            LIMITED.labels("agent_sessions").inc()
            raise QuotaExceeded(
                f"this tenant has {usage.agent_sessions} agent sessions, its quota",
                retry_after_s=WINDOW_S,
            )

    def record(self, tenant_id: uuid.UUID, *, added_bytes: int = 0, sessions: int = 0) -> None:
        """What a write that succeeded added, until the next read of the usage includes it."""
        usage = self._usage.get(tenant_id)
        if usage is not None:
            usage.stored_bytes += added_bytes
            usage.agent_sessions += sessions

    async def _current(self, database: Database, principal: Principal) -> _Usage:
        now = self.clock()
        usage = self._usage.get(principal.tenant_id)
        if usage is not None and now - usage.read_at < self.config.refresh_s:
            return usage
        # The quota is the tenant's, whichever user the key is bound to.
        tenant_wide = dataclasses.replace(principal, user_id=None)
        async with database.tenant(principal.tenant_id) as db:
            read = await AgentSessionService(db, tenant_wide).usage()
        usage = _Usage(now, read.stored_bytes, read.agent_sessions)
        self._usage[principal.tenant_id] = usage
        return usage
