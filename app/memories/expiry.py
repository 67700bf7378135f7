"""Memories that retention removes: those past their ``expires_at``, and those of agent
sessions deleted for idleness.

Owns the batch deletion of expired memories and the audit it leaves, as a user's erasure leaves
it: the rows (text and vector) go, the events of each memory keep ids only, a ``DELETE`` event
names the reason, and one ``memory.changed`` webhook event per user says which memories went.
Runs under one tenant's transaction with no credential (the worker's), so the actor is
``retention``. Flushes, never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.memories.records import EventKind
from app.memories.repository import MemoryRepository
from app.models import Memory
from app.tenancy.principal import Scope
from app.webhooks.events import MEMORY_CHANGED, memory_data
from app.webhooks.outbox import WebhookOutbox

ACTOR = "retention"
EXPIRED = "expired"
IDLE_SESSION = "agent_session_idle"


class MemoryExpiry:
    def __init__(self, db: AsyncSession, tenant_id: uuid.UUID) -> None:
        self.db = db
        self.tenant_id = tenant_id
        self.memories = MemoryRepository(db, Scope(tenant_id))
        self.outbox = WebhookOutbox(db, tenant_id)

    async def purge_expired(self, *, batch: int) -> int:
        """Delete up to ``batch`` memories whose ``expires_at`` has passed (the oldest expiry
        first); returns how many went."""
        due = (
            select(Memory.memory_id)
            .where(
                Memory.tenant_id == self.tenant_id,
                Memory.expires_at.is_not(None),
                Memory.expires_at <= func.now(),
            )
            .order_by(Memory.expires_at, Memory.memory_id)
            .limit(batch)
            .with_for_update(skip_locked=True)
        )
        rows = await self.db.execute(
            delete(Memory)
            .where(
                Memory.tenant_id == self.tenant_id,
                Memory.memory_id.in_(due.scalar_subquery()),
                # Re-checked: an expiry moved meanwhile keeps the memory.
                Memory.expires_at <= func.now(),
            )
            .returning(Memory.memory_id, Memory.user_id)
        )
        removed = [(row.memory_id, row.user_id) for row in rows.all()]
        await self._record(removed, EXPIRED)
        return len(removed)

    async def erase_agent_sessions(self, agent_session_ids: Sequence[uuid.UUID]) -> int:
        """Before idle agent sessions are deleted: their memories go as a deleted agent
        session's do. Returns how many memories were removed."""
        count = 0
        for agent_session_id in agent_session_ids:
            removed = await self.memories.delete(agent_session_id=agent_session_id)
            await self._record(removed, IDLE_SESSION, agent_session_id=agent_session_id)
            count += len(removed)
        return count

    async def _record(
        self, removed: list[tuple[uuid.UUID, str | None]], reason: str, **where: uuid.UUID
    ) -> None:
        await self.memories.scrub_events([memory_id for memory_id, _ in removed], **where)
        await self.memories.insert_events(
            [
                {
                    "memory_id": memory_id,
                    "user_id": user_id,
                    "event": EventKind.DELETE.value,
                    "actor": ACTOR,
                    "details": {"reason": reason},
                    **where,
                }
                for memory_id, user_id in removed
            ]
        )
        by_user: dict[str | None, list[uuid.UUID]] = {}
        for memory_id, user_id in removed:
            by_user.setdefault(user_id, []).append(memory_id)
        for user_id, memory_ids in by_user.items():
            await self.outbox.emit(
                MEMORY_CHANGED,
                memory_data(
                    user_id=user_id,
                    agent_session_id=where.get("agent_session_id"),
                    changes=[(EventKind.DELETE.value, memory_id) for memory_id in memory_ids],
                ),
            )
