"""SQL for reading long-term memories and their events: search, browse, audit, erasure.

Scoped to one tenant (and for a user-bound credential, one user: it sees only that user's
memories and events). Vectors are compared only with vectors of the same embedder
(``embedding_model``). Returns ``records`` values, never ORM rows, and never reads a vector
back. The phase-2 writes and re-embedding are ``store``. Flushes, never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from app.memories.ranking import RRF_K, SCORE_DIGITS
from app.memories.records import (
    Category,
    ProducedMemory,
    SearchHit,
    StoredEvent,
    StoredMemory,
)
from app.memories.search_sql import EF_SEARCH, ITERATIVE, SEARCH_BY_INDEX, SEARCH_EXACT, SIZES
from app.memories.vector_plan import (
    COUNT_CAP,
    DEFAULT_EF_SEARCH,
    Sizes,
    VectorPlan,
)
from app.models import Memory, MemoryEvent
from app.tenancy.principal import Scope

ALL_CATEGORIES = [str(category) for category in Category]
_MEMORY_COLUMNS = (
    Memory.memory_id,
    Memory.user_id,
    Memory.agent_id,
    Memory.category,
    Memory.slot,
    Memory.slot_value,
    Memory.content,
    Memory.confidence,
    Memory.agent_session_id,
    Memory.archive_seq,
    Memory.source_seqs,
    Memory.embedding_model,
    Memory.superseded_by,
    Memory.created_at,
    Memory.updated_at,
    Memory.expires_at,
)
_EVENT_COLUMNS = (
    MemoryEvent.event_id,
    MemoryEvent.memory_id,
    MemoryEvent.related_memory_id,
    MemoryEvent.event,
    MemoryEvent.old_content,
    MemoryEvent.new_content,
    MemoryEvent.agent_session_id,
    MemoryEvent.archive_seq,
    MemoryEvent.source_seqs,
    MemoryEvent.actor,
    MemoryEvent.details,
    MemoryEvent.created_at,
)

_COLUMN_DIMENSION = text(
    "SELECT atttypmod FROM pg_attribute"
    " WHERE attrelid = to_regclass('memories') AND attname = 'embedding' AND NOT attisdropped"
)


async def column_dimension(db: AsyncSession) -> int | None:
    """The dimension of ``memories.embedding`` (pgvector keeps it as the type modifier), or
    ``None`` when the table does not exist yet."""
    found = await db.scalar(_COLUMN_DIMENSION)
    return None if found is None or found < 1 else int(found)


def vector_text(vector: Sequence[float]) -> str:
    return "[" + ",".join(map(str, vector)) + "]"


def _memory_at(row: Sequence[Any], start: int) -> StoredMemory:
    """The ``StoredMemory`` of a driver row whose memory columns begin at ``start``."""
    values = row[start:]
    return StoredMemory(
        memory_id=values[0],
        user_id=values[1],
        agent_id=values[2],
        category=values[3],
        slot=values[4],
        slot_value=values[5],
        content=values[6],
        confidence=values[7],
        agent_session_id=values[8],
        archive_seq=values[9],
        source_seqs=tuple(values[10]),
        embedding_model=values[11],
        superseded_by=values[12],
        created_at=values[13],
        updated_at=values[14],
        expires_at=values[15],
    )


def _event(row: Any) -> StoredEvent:
    return StoredEvent(
        event_id=row.event_id,
        memory_id=row.memory_id,
        related_memory_id=row.related_memory_id,
        event=row.event,
        old_content=row.old_content,
        new_content=row.new_content,
        agent_session_id=row.agent_session_id,
        archive_seq=row.archive_seq,
        source_seqs=tuple(row.source_seqs),
        actor=row.actor,
        details=row.details,
        created_at=row.created_at,
    )


def user_is(column: Any, user_id: str | None) -> Any:
    return column.is_(None) if user_id is None else column == user_id


class MemoryRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    def _visible(self) -> list[Any]:
        conditions: list[Any] = [Memory.tenant_id == self.scope.tenant_id]
        if self.scope.user_id is not None:
            conditions.append(Memory.user_id == self.scope.user_id)
        return conditions

    def _live(self) -> list[Any]:
        """Visible and not expired: an expired memory is hidden from the moment it expires
        (the worker deletes it later)."""
        return [
            *self._visible(),
            or_(Memory.expires_at.is_(None), Memory.expires_at > func.now()),
        ]

    def _visible_events(self) -> list[Any]:
        conditions: list[Any] = [MemoryEvent.tenant_id == self.scope.tenant_id]
        if self.scope.user_id is not None:
            conditions.append(MemoryEvent.user_id == self.scope.user_id)
        return conditions

    async def insert_events(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            await self.db.execute(
                insert(MemoryEvent), [{"tenant_id": self.scope.tenant_id, **row} for row in rows]
            )

    # --- search and reads --------------------------------------------------------------------

    def _filters(
        self, *, model: str, user_id: str | None, category: str | None, include_superseded: bool
    ) -> dict[str, Any]:
        return {
            "tenant_id": self.scope.tenant_id,
            "bound_user": self.scope.user_id,
            "user_id": user_id,
            "category": category,
            "include_superseded": include_superseded,
            "model": model,
        }

    async def sizes(
        self, *, model: str, user_id: str | None, category: str | None, include_superseded: bool
    ) -> Sizes:
        """How many visible rows the filters keep (at most ``COUNT_CAP``) and how many the table
        holds: what ``choose_plan`` needs."""
        filters = self._filters(
            model=model, user_id=user_id, category=category, include_superseded=include_superseded
        )
        row = (await self.db.execute(SIZES, {**filters, "cap": COUNT_CAP})).one()
        return Sizes(filtered_rows=int(row[0]), table_rows=max(int(row[1] or 0), 0))

    async def search(
        self,
        *,
        query: str,
        vector: Sequence[float],
        model: str,
        per_retriever: int,
        user_id: str | None,
        category: str | None,
        include_superseded: bool,
        min_score: float,
        limit: int,
        plan: VectorPlan,
    ) -> list[SearchHit]:
        """Hybrid search of the visible memories made by embedder ``model``, best first; the
        vector retriever searches as ``plan`` says."""
        if plan.iterative:
            await self.db.execute(ITERATIVE, {"ef_search": str(plan.ef_search)})
        elif not plan.exact and plan.ef_search != DEFAULT_EF_SEARCH:
            await self.db.execute(EF_SEARCH, {"ef_search": str(plan.ef_search)})
        result = await self.db.execute(
            SEARCH_EXACT if plan.exact else SEARCH_BY_INDEX,
            {
                **self._filters(
                    model=model,
                    user_id=user_id,
                    category=category,
                    include_superseded=include_superseded,
                ),
                "vector": vector_text(vector),
                "query": query,
                "per_retriever": per_retriever,
                "rrf_k": RRF_K,
                "digits": SCORE_DIGITS,
                "min_score": min_score,
                "limit": limit,
                # The exact form reads the covering index by category: the one asked for, or all.
                "categories": [category] if category is not None else ALL_CATEGORIES,
            },
        )
        return [
            SearchHit(
                memory=_memory_at(row, 4),
                score=float(row[3]),
                vector_rank=row[0],
                text_rank=row[1],
                fused=round(row[2], 8),
            )
            for row in result.all()
        ]

    async def page(
        self,
        *,
        user_id: str | None,
        agent_id: str | None,
        category: str | None,
        include_superseded: bool,
        before: tuple[datetime, uuid.UUID] | None,
        limit: int,
    ) -> list[StoredMemory]:
        """Visible memories, newest first, before ``(created_at, memory_id)``."""
        statement = select(*_MEMORY_COLUMNS).where(*self._live())
        if user_id is not None:
            statement = statement.where(Memory.user_id == user_id)
        if agent_id is not None:
            statement = statement.where(Memory.agent_id == agent_id)
        if category is not None:
            statement = statement.where(Memory.category == category)
        if not include_superseded:
            statement = statement.where(Memory.superseded_by.is_(None))
        if before is not None:
            statement = statement.where(
                tuple_(Memory.created_at, Memory.memory_id) < tuple_(*before)
            )
        statement = statement.order_by(Memory.created_at.desc(), Memory.memory_id.desc())
        rows = await self.db.execute(statement.limit(limit))
        return [_memory_at(row, 0) for row in rows.all()]

    async def get(self, memory_id: uuid.UUID) -> StoredMemory | None:
        row = (
            await self.db.execute(
                select(*_MEMORY_COLUMNS).where(*self._live(), Memory.memory_id == memory_id)
            )
        ).first()
        return None if row is None else _memory_at(row, 0)

    async def events(self, memory_id: uuid.UUID) -> list[StoredEvent]:
        """Every event of the memory, or naming it (a memory it superseded), oldest first."""
        rows = await self.db.execute(
            select(*_EVENT_COLUMNS)
            .where(
                *self._visible_events(),
                or_(
                    MemoryEvent.memory_id == memory_id,
                    MemoryEvent.related_memory_id == memory_id,
                ),
            )
            .order_by(MemoryEvent.event_id)
        )
        return [_event(row) for row in rows.all()]

    async def produced_by(
        self, agent_session_id: uuid.UUID, archive_seq: int
    ) -> list[ProducedMemory]:
        """The changes archive ``archive_seq`` made, each with its memory as it is now."""
        rows = await self.db.execute(
            select(
                MemoryEvent.event,
                MemoryEvent.memory_id.label("changed_id"),
                MemoryEvent.source_seqs.label("event_seqs"),
                *_MEMORY_COLUMNS,
            )
            .outerjoin(
                Memory,
                (Memory.tenant_id == MemoryEvent.tenant_id)
                & (Memory.memory_id == MemoryEvent.memory_id)
                & or_(Memory.expires_at.is_(None), Memory.expires_at > func.now()),
            )
            .where(
                *self._visible_events(),
                MemoryEvent.agent_session_id == agent_session_id,
                MemoryEvent.archive_seq == archive_seq,
            )
            .order_by(MemoryEvent.event_id)
        )
        return [
            ProducedMemory(
                event=row.event,
                memory_id=row.changed_id,
                source_seqs=tuple(row.event_seqs),
                memory=None if row.memory_id is None else _memory_at(row, 3),
            )
            for row in rows.all()
        ]

    # --- erasure -----------------------------------------------------------------------------

    async def delete(
        self, *, memory_id: uuid.UUID | None = None, agent_session_id: uuid.UUID | None = None
    ) -> list[tuple[uuid.UUID, str | None]]:
        """Remove one visible memory, or every memory an agent session's archives added or
        restated (its current text, or an earlier one, came from that agent session); returns
        the ids and users of the removed rows (vector and text go with them)."""
        statement = delete(Memory).where(*self._visible())
        if memory_id is not None:
            statement = statement.where(Memory.memory_id == memory_id)
        if agent_session_id is not None:
            changed = select(MemoryEvent.memory_id).where(
                MemoryEvent.tenant_id == self.scope.tenant_id,
                MemoryEvent.agent_session_id == agent_session_id,
            )
            statement = statement.where(
                or_(Memory.agent_session_id == agent_session_id, Memory.memory_id.in_(changed))
            )
        rows = await self.db.execute(statement.returning(Memory.memory_id, Memory.user_id))
        return [(row.memory_id, row.user_id) for row in rows.all()]

    async def scrub_events(
        self, memory_ids: Sequence[uuid.UUID], agent_session_id: uuid.UUID | None = None
    ) -> None:
        """Events keep no content of erased memories (nor any content an erased agent session's
        archives brought in): only ids remain."""
        touched: list[ColumnElement[bool]] = [
            MemoryEvent.memory_id.in_(memory_ids),
            MemoryEvent.related_memory_id.in_(memory_ids),
        ]
        if agent_session_id is not None:
            touched.append(MemoryEvent.agent_session_id == agent_session_id)
        await self.db.execute(
            update(MemoryEvent)
            .where(MemoryEvent.tenant_id == self.scope.tenant_id, or_(*touched))
            .values(old_content=None, new_content=None)
        )
