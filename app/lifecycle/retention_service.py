"""Retention: a tenant's policy (read and replaced by its admin or the operator), and the purges
one tenant's transaction makes under it.

Owns what a purge of each kind does and in which order: raw messages of old archives (the
archive and the working memory stay, marked), idle agent sessions (their memories erased first,
as a deleted agent session's are), expired memories. Never crosses tenants (``retention_jobs``
does, through the tenant list) and never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.lifecycle.retention_policy import Retention
from app.lifecycle.retention_repository import PolicyRow, PurgedArchive, RetentionRepository
from app.memories.expiry import MemoryExpiry
from app.tenancy.principal import Principal


@dataclass(frozen=True, slots=True)
class StoredRetention:
    """A tenant's policy as stored; ``updated_at`` is None while it has never set one."""

    policy: Retention
    updated_by: uuid.UUID | None = None
    updated_at: datetime | None = None


def _stored(row: PolicyRow | None) -> StoredRetention:
    if row is None:
        return StoredRetention(Retention())
    return StoredRetention(
        Retention(
            archive_messages_days=row.archive_messages_days,
            idle_session_days=row.idle_session_days,
            memory_days=dict(row.memory_days),
        ),
        row.updated_by,
        row.updated_at,
    )


async def get_policy(db: AsyncSession, tenant_id: uuid.UUID) -> StoredRetention:
    return _stored(await RetentionRepository(db, tenant_id).policy())


async def set_policy(
    db: AsyncSession, tenant_id: uuid.UUID, policy: Retention, *, updated_by: uuid.UUID | None
) -> StoredRetention:
    """Replace the tenant's policy with ``policy`` (already checked)."""
    row = await RetentionRepository(db, tenant_id).put_policy(
        {
            "archive_messages_days": policy.archive_messages_days,
            "idle_session_days": policy.idle_session_days,
            "memory_days": dict(policy.memory_days),
        },
        updated_by,
    )
    return _stored(row)


async def memory_lifetimes(db: AsyncSession, tenant_id: uuid.UUID) -> Mapping[str, int]:
    """Days a new memory of each category lives under the tenant's policy (none: forever)."""
    return (await get_policy(db, tenant_id)).policy.memory_days


class RetentionService:
    """The policy as a tenant admin reads and replaces it (``/v1/tenant/retention``)."""

    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal

    async def get(self) -> StoredRetention:
        return await get_policy(self.db, self.principal.tenant_id)

    async def replace(self, policy: Retention) -> StoredRetention:
        return await set_policy(
            self.db, self.principal.tenant_id, policy, updated_by=self.principal.api_key_id
        )


class TenantPurge:
    """One tenant's purges, each bounded by ``batch`` rows and run in the caller's transaction."""

    def __init__(self, db: AsyncSession, tenant_id: uuid.UUID) -> None:
        self.repository = RetentionRepository(db, tenant_id)
        self.memories = MemoryExpiry(db, tenant_id)
        self.tenant_id = tenant_id

    async def policy(self) -> Retention:
        return _stored(await self.repository.policy()).policy

    async def archive_messages(self, policy: Retention, *, batch: int) -> list[PurgedArchive]:
        """Raw messages of up to ``batch`` done archives older than the policy's limit."""
        if policy.archive_messages_days is None:
            return []
        return await self.repository.purge_archive_messages(
            days=policy.archive_messages_days, batch=batch
        )

    async def idle_sessions(self, policy: Retention, *, batch: int) -> list[uuid.UUID]:
        """Up to ``batch`` agent sessions idle past the policy's limit, deleted with everything
        derived from them; their memories erased first."""
        days = policy.idle_session_days
        if days is None:
            return []
        locked = await self.repository.lock_idle_sessions(days=days, batch=batch)
        if not locked:
            return []
        await self.memories.erase_agent_sessions(locked)
        return await self.repository.delete_idle_sessions(locked, days=days)

    async def expired_memories(self, *, batch: int) -> int:
        """Memories past their ``expires_at``, whatever the policy says now: the expiry was
        decided when they were written."""
        return await self.memories.purge_expired(batch=batch)
