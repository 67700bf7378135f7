"""SQL of the phase-2 write path and of re-embedding, under the claimed archive's tenant.

Owns the lookups a candidate is decided against (the nearest current memory of the user's
category, the current memories sharing its slot), the row changes an ADD, UPDATE or SUPERSEDE
makes, the per-user advisory lock that serialises them, and the batches of re-embedding. Names
the user explicitly (the job has no credential). Flushes, never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import case, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.memories.changes import Existing
from app.memories.repository import user_is
from app.models import Memory
from app.tenancy.principal import Scope
from app.wm.redaction import REDACTED


class MemoryStore:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    async def lock_user(self, user_id: str | None) -> None:
        """Serialise memory writes for one user of this tenant until the transaction ends, so
        two archives of the same user never both add the same fact."""
        key = f"memories:{self.scope.tenant_id}:{user_id or ''}"
        await self.db.execute(select(func.pg_advisory_xact_lock(func.hashtextextended(key, 0))))

    def _scope_of(self, user_id: str | None, category: str) -> list[Any]:
        return [
            Memory.tenant_id == self.scope.tenant_id,
            user_is(Memory.user_id, user_id),
            Memory.category == category,
            Memory.superseded_by.is_(None),
            # An expired memory is gone for the user: a new statement of it is a new memory.
            or_(Memory.expires_at.is_(None), Memory.expires_at > func.now()),
        ]

    async def nearest(
        self, user_id: str | None, category: str, vector: Sequence[float], model: str
    ) -> Existing | None:
        """The most similar current memory of the user's category made by embedder ``model``."""
        distance = Memory.embedding.cosine_distance(list(vector))
        row = (
            await self.db.execute(
                select(
                    Memory.memory_id,
                    Memory.content,
                    Memory.slot,
                    Memory.slot_value,
                    (1.0 - distance).label("similarity"),
                )
                .where(*self._scope_of(user_id, category), Memory.embedding_model == model)
                .order_by(distance)
                .limit(1)
            )
        ).first()
        return None if row is None else Existing(*row)

    async def same_slot(
        self, user_id: str | None, category: str, slot: str, vector: Sequence[float], model: str
    ) -> list[Existing]:
        """Current memories of the user's category stating ``slot``, newest first."""
        similarity = case(
            (Memory.embedding_model == model, 1.0 - Memory.embedding.cosine_distance(list(vector))),
            else_=0.0,
        )
        rows = await self.db.execute(
            select(Memory.memory_id, Memory.content, Memory.slot, Memory.slot_value, similarity)
            .where(*self._scope_of(user_id, category), Memory.slot == slot)
            .order_by(Memory.updated_at.desc(), Memory.memory_id)
        )
        return [Existing(*row) for row in rows.all()]

    async def insert(self, values: dict[str, Any]) -> uuid.UUID:
        result = await self.db.execute(
            insert(Memory)
            .values(tenant_id=self.scope.tenant_id, **values)
            .returning(Memory.memory_id)
        )
        return result.scalar_one()

    async def rewrite(self, memory_id: uuid.UUID, values: dict[str, Any]) -> None:
        await self.db.execute(
            update(Memory)
            .where(Memory.tenant_id == self.scope.tenant_id, Memory.memory_id == memory_id)
            .values(updated_at=func.now(), **values)
        )

    async def supersede(self, memory_ids: Sequence[uuid.UUID], by: uuid.UUID) -> None:
        await self.db.execute(
            update(Memory)
            .where(Memory.tenant_id == self.scope.tenant_id, Memory.memory_id.in_(memory_ids))
            .values(superseded_by=by, updated_at=func.now())
        )

    # --- re-embedding ------------------------------------------------------------------------

    async def count_stale(self, model: str) -> int:
        result = await self.db.execute(
            select(func.count())
            .select_from(Memory)
            .where(
                Memory.tenant_id == self.scope.tenant_id,
                Memory.embedding_model != model,
                Memory.embedding_model != REDACTED,
            )
        )
        return result.scalar_one()

    async def stale(
        self, model: str, *, after: uuid.UUID | None, limit: int
    ) -> list[tuple[uuid.UUID, str]]:
        """Memories not embedded by ``model``, by id after ``after``: ``(memory_id, content)``.
        A redacted memory has no vector and never gets one again."""
        statement = select(Memory.memory_id, Memory.content).where(
            Memory.tenant_id == self.scope.tenant_id,
            Memory.embedding_model != model,
            Memory.embedding_model != REDACTED,
        )
        if after is not None:
            statement = statement.where(Memory.memory_id > after)
        rows = await self.db.execute(statement.order_by(Memory.memory_id).limit(limit))
        return [(row.memory_id, row.content) for row in rows.all()]

    async def set_embedding(
        self, memory_id: uuid.UUID, content: str, vector: Sequence[float], model: str
    ) -> bool:
        """Store the new vector unless the memory changed since it was read."""
        result = await self.db.execute(
            update(Memory)
            .where(
                Memory.tenant_id == self.scope.tenant_id,
                Memory.memory_id == memory_id,
                Memory.content == content,
            )
            .values(embedding=list(vector), embedding_model=model)
            .returning(Memory.memory_id)
        )
        return result.first() is not None
