"""Long-term memory for the API: hybrid search, recall, browse, audit, and erasure.

Owns what a credential may see (its tenant; a user-bound key only its user's memories, whatever
``user_id`` a query names), the search order (``ranking``), and erasure (a memory, or everything
an agent session's archives produced: rows removed, events scrubbed to ids, a DELETE event
each, and a ``memory.changed`` webhook event in the outbox). Query embeddings are computed by
the caller before its transaction opens (``embed_query``). Flushes, never commits.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final

from sqlalchemy.ext.asyncio import AsyncSession

from app import telemetry
from app.cursors import decode_cursor, encode_cursor
from app.errors import InvalidInput, NotFound, Unavailable
from app.memories.embedding import Embedder, EmbeddingError, dimension_problem
from app.memories.ranking import newest_first_among_conflicts
from app.memories.records import (
    EventKind,
    ProducedMemory,
    SearchHit,
    StoredEvent,
    StoredMemory,
)
from app.memories.repository import MemoryRepository, column_dimension
from app.memories.vector_plan import SIZES, VectorPlan, choose_plan
from app.tenancy.principal import Principal
from app.validation import find_unstorable
from app.webhooks.events import MEMORY_CHANGED, memory_data
from app.webhooks.outbox import WebhookOutbox

CANDIDATES_PER_RETRIEVER: Final = 40
"""Candidates each retriever contributes to the fusion: pgvector's default ``ef_search``."""
RECALL_LIMIT: Final = 5


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """A search text with its embedding, computed before any transaction opens."""

    text: str
    vector: list[float]
    embedding_model: str


def require_storable(**values: str | None) -> None:
    """Query texts and filters Postgres cannot hold (NUL, lone surrogates) are a 422, early."""
    for name, value in values.items():
        if value is not None and find_unstorable(value) is not None:
            raise InvalidInput(
                f"{name} contains a NUL character or an unpaired surrogate",
                errors=[{"loc": ["query", name], "msg": "not storable text"}],
            )


async def embed_query(embedder: Embedder, query: str, *, name: str = "q") -> MemoryQuery:
    """Embed ``query`` (no transaction may be open: the embedder may call a server)."""
    require_storable(**{name: query})
    if not query.strip():
        raise InvalidInput(
            f"{name} is blank", errors=[{"loc": ["query", name], "msg": "must not be blank"}]
        )
    try:
        [vector] = await embedder.embed([query])
    except EmbeddingError as error:
        raise Unavailable(f"the embedder is unavailable: {error.message}") from error
    return MemoryQuery(query, vector, embedder.identity)


async def embedder_problem(db: AsyncSession, embedder: Embedder) -> str | None:
    """Why ``embedder`` cannot serve this database (its dimension is not the column's), or
    ``None``; also ``None`` before the memories table exists (readiness reports that)."""
    column = await column_dimension(db)
    if column is None:
        return None
    return dimension_problem(embedder.identity, embedder.dim, column)


def actor_of(principal: Principal) -> str:
    return f"api_key:{principal.api_key_id}"


class MemoryService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal
        self.memories = MemoryRepository(db, principal.scope)

    @telemetry.traced(
        "retrieval workmem.memories",
        lambda self, query, **options: {
            **telemetry.ids(self.principal.tenant_id),
            telemetry.OPERATION: "retrieval",
            telemetry.DATA_SOURCE: "workmem.memories",
            "workmem.limit": options.get("limit", 5),
        },
    )
    async def search(
        self,
        query: MemoryQuery,
        *,
        user_id: str | None = None,
        category: str | None = None,
        limit: int = 5,
        min_score: float = 0.0,
        include_superseded: bool = False,
        per_retriever: int | None = None,
    ) -> list[SearchHit]:
        """Vector top-k fused with full-text rank by reciprocal rank fusion; ``min_score`` is
        compared with each hit's cosine similarity to the query. Each retriever contributes
        ``per_retriever`` candidates (default: 40, or 4 × ``limit`` when more)."""
        require_storable(user_id=user_id)
        if not any(query.vector):
            # No content word in the query: nothing to compare, and nothing to match as text.
            return []
        per_retriever = per_retriever or max(CANDIDATES_PER_RETRIEVER, 4 * limit)
        plan = await self.vector_plan(
            query,
            limit=limit,
            per_retriever=per_retriever,
            user_id=user_id,
            category=category,
            include_superseded=include_superseded,
        )
        return await self.memories.search(
            query=query.text,
            vector=query.vector,
            model=query.embedding_model,
            per_retriever=per_retriever,
            user_id=user_id,
            category=category,
            include_superseded=include_superseded,
            min_score=min_score,
            limit=limit,
            plan=plan,
        )

    async def vector_plan(
        self,
        query: MemoryQuery,
        *,
        limit: int,
        per_retriever: int,
        user_id: str | None,
        category: str | None,
        include_superseded: bool,
    ) -> VectorPlan:
        """Exact or index search for these filters (``vector_plan``), from counts this process
        remembers for a minute."""
        model = query.embedding_model
        scope = self.principal.scope
        key = (scope.tenant_id, scope.user_id, model, user_id, category, include_superseded)
        sizes = SIZES.get(key)
        if sizes is None:
            sizes = await self.memories.sizes(
                model=model,
                user_id=user_id,
                category=category,
                include_superseded=include_superseded,
            )
            SIZES.put(key, sizes)
        return choose_plan(
            filtered_rows=sizes.filtered_rows,
            table_rows=sizes.table_rows,
            limit=limit,
            per_retriever=per_retriever,
        )

    async def recall(
        self, query: MemoryQuery, *, user_id: str | None, limit: int, min_score: float
    ) -> list[SearchHit]:
        """What a context recalls for an agent session of ``user_id``: at most 5 memories of
        that user above ``min_score``, newest first among those stating the same slot."""
        hits = await self.search(
            query, user_id=user_id, limit=min(limit, RECALL_LIMIT), min_score=min_score
        )
        if user_id is None:
            # Agent sessions without a user recall only memories that have no user either.
            hits = [hit for hit in hits if hit.memory.user_id is None]
        return newest_first_among_conflicts(hits)

    async def page(
        self,
        *,
        user_id: str | None,
        agent_id: str | None,
        category: str | None,
        include_superseded: bool,
        cursor: str | None,
        limit: int,
    ) -> tuple[list[StoredMemory], str | None]:
        require_storable(user_id=user_id, agent_id=agent_id)
        rows = await self.memories.page(
            user_id=user_id,
            agent_id=agent_id,
            category=category,
            include_superseded=include_superseded,
            before=decode_cursor(cursor) if cursor else None,
            limit=limit + 1,
        )
        if len(rows) <= limit:
            return rows, None
        last = rows[limit - 1]
        return rows[:limit], encode_cursor(last.created_at, last.memory_id)

    async def get(self, memory_id: uuid.UUID) -> StoredMemory:
        found = await self.memories.get(memory_id)
        if found is None:
            raise NotFound(f"memory {memory_id} not found")
        return found

    async def events(self, memory_id: uuid.UUID) -> list[StoredEvent]:
        """The memory's audit trail; it outlives an erased memory (with ids only)."""
        found = await self.memories.events(memory_id)
        if not found:
            raise NotFound(f"memory {memory_id} not found")
        return found

    async def produced_by(
        self, agent_session_id: uuid.UUID, archive_seq: int
    ) -> list[ProducedMemory]:
        return await self.memories.produced_by(agent_session_id, archive_seq)

    async def _erase(
        self, removed: list[tuple[uuid.UUID, str | None]], reason: str, **where: uuid.UUID
    ) -> None:
        await self.memories.scrub_events([memory_id for memory_id, _ in removed], **where)
        await self.memories.insert_events(
            [
                {
                    "memory_id": memory_id,
                    "user_id": user_id,
                    "event": EventKind.DELETE.value,
                    "actor": actor_of(self.principal),
                    "details": {"reason": reason},
                    **where,
                }
                for memory_id, user_id in removed
            ]
        )
        if removed:
            users = {user_id for _, user_id in removed}
            await WebhookOutbox(self.db, self.principal.tenant_id).emit(
                MEMORY_CHANGED,
                memory_data(
                    user_id=users.pop() if len(users) == 1 else None,
                    agent_session_id=where.get("agent_session_id"),
                    changes=[(EventKind.DELETE.value, memory_id) for memory_id, _ in removed],
                ),
            )

    async def delete(self, memory_id: uuid.UUID) -> None:
        """A user's erasure of one memory: its row (vector and text) goes, its events keep ids."""
        removed = await self.memories.delete(memory_id=memory_id)
        if not removed:
            raise NotFound(f"memory {memory_id} not found")
        await self._erase(removed, "memory_deleted")

    async def erase_agent_session(self, agent_session_id: uuid.UUID) -> int:
        """Before an agent session is deleted: every memory its archives produced goes, and no
        event keeps content that came from it. Returns how many memories were removed."""
        removed = await self.memories.delete(agent_session_id=agent_session_id)
        await self._erase(removed, "agent_session_deleted", agent_session_id=agent_session_id)
        return len(removed)
