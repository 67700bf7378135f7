"""HTTP routes for long-term memory (``/v1/memories``): search, browse, read, audit, forget.

Owns the parameters and the transactions of a request — a search query is embedded before its
transaction opens — and maps service values to the ``…Read`` bodies; decides nothing itself.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from app.deps import DatabaseDep, SettingsDep
from app.memories.dependencies import EmbedderDep
from app.memories.schemas import (
    CategoryName,
    MemoryEventPage,
    MemoryEventRead,
    MemoryHitRead,
    MemoryPage,
    MemoryRead,
    MemorySearchRead,
)
from app.memories.service import MemoryService, embed_query
from app.tenancy.auth import Reader, Writer
from app.web.problems import TENANT_ROUTE, problems
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/v1/memories",
    tags=["memories"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE),
)

MAX_QUERY_CHARS = 2000


@router.get("/search", responses=problems(422))
async def search_memories(
    principal: Reader,
    database: DatabaseDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
    q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, description="the query")],
    user_id: str | None = None,
    category: CategoryName | None = None,
    limit: Annotated[int, Query(ge=1, le=50)] = 5,
    min_score: Annotated[
        float | None,
        Query(
            ge=-1, le=1, description="least cosine similarity (default WORKMEM_MEMORY_MIN_SCORE)"
        ),
    ] = None,
    include_superseded: bool = False,
) -> MemorySearchRead:
    """Hybrid search: vector top-k fused with full-text rank (reciprocal rank fusion), ties by
    recency. A user-bound key searches only its user's memories."""
    cut = settings.memory_min_score if min_score is None else min_score
    query = await embed_query(embedder, q)
    async with database.tenant(principal.tenant_id) as db:
        hits = await MemoryService(db, principal).search(
            query,
            user_id=user_id,
            category=category,
            limit=limit,
            min_score=cut,
            include_superseded=include_superseded,
        )
    return MemorySearchRead(
        items=[MemoryHitRead.from_hit(hit) for hit in hits],
        embedding_model=query.embedding_model,
        min_score=cut,
    )


@router.get("", responses=problems(422))
async def list_memories(
    principal: Reader,
    database: DatabaseDep,
    user_id: str | None = None,
    agent_id: str | None = None,
    category: CategoryName | None = None,
    include_superseded: bool = False,
    cursor: str | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> MemoryPage:
    """Memories, newest first; superseded ones only when asked for."""
    async with database.tenant(principal.tenant_id) as db:
        rows, next_cursor = await MemoryService(db, principal).page(
            user_id=user_id,
            agent_id=agent_id,
            category=category,
            include_superseded=include_superseded,
            cursor=cursor,
            limit=limit,
        )
    return MemoryPage(items=[MemoryRead.from_value(row) for row in rows], next_cursor=next_cursor)


@router.get("/{memory_id}", responses=problems(404, 422))
async def get_memory(memory_id: uuid.UUID, principal: Reader, database: DatabaseDep) -> MemoryRead:
    async with database.tenant(principal.tenant_id) as db:
        return MemoryRead.from_value(await MemoryService(db, principal).get(memory_id))


@router.delete("/{memory_id}", status_code=status.HTTP_204_NO_CONTENT, responses=problems(404, 422))
async def delete_memory(memory_id: uuid.UUID, principal: Writer, database: DatabaseDep) -> Response:
    """Forget a memory (a user's erasure): the row, its vector and its text are removed; its
    events remain with ids only, and a DELETE event is added."""
    async with database.tenant(principal.tenant_id) as db:
        await MemoryService(db, principal).delete(memory_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{memory_id}/events", responses=problems(404, 422))
async def memory_events(
    memory_id: uuid.UUID, principal: Reader, database: DatabaseDep
) -> MemoryEventPage:
    """The memory's audit trail, oldest first, with the archive and messages of each change."""
    async with database.tenant(principal.tenant_id) as db:
        events = await MemoryService(db, principal).events(memory_id)
    return MemoryEventPage(items=[MemoryEventRead.from_value(event) for event in events])
