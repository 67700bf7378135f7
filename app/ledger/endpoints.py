"""HTTP routes of the context ledger: the recorded contexts of an agent session, one by one,
and rebuilt from the rows they name (``render=true``). Readers only; recording happens on the
context routes themselves."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query

from app.deps import DatabaseDep
from app.ledger.presenter import context_record_read, rendered_read
from app.ledger.schemas import ContextRecordPage, ContextRecordRead
from app.ledger.service import LedgerService
from app.tenancy.auth import Reader
from app.web.problems import TENANT_ROUTE, problems
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/v1/sessions",
    tags=["contexts"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE, 404, 422),
)


@router.get("/{agent_session_id}/contexts")
async def list_contexts(
    agent_session_id: uuid.UUID,
    principal: Reader,
    database: DatabaseDep,
    cursor: str | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> ContextRecordPage:
    """The agent session's recorded contexts, newest first."""
    async with database.tenant(principal.tenant_id) as db:
        rows, next_cursor = await LedgerService(db, principal).page(
            agent_session_id, cursor=cursor, limit=limit
        )
        return ContextRecordPage(
            items=[context_record_read(row) for row in rows], next_cursor=next_cursor
        )


@router.get("/{agent_session_id}/contexts/{context_id}")
async def get_context_record(
    agent_session_id: uuid.UUID,
    context_id: uuid.UUID,
    principal: Reader,
    database: DatabaseDep,
    render: Annotated[
        bool,
        Query(
            description="rebuild the messages from the rows the context names and compare "
            "their sha256 with the recorded one; what was since erased or redacted is named"
        ),
    ] = False,
) -> ContextRecordRead:
    """One recorded context: what it was made of, by id, seq and hash."""
    async with database.tenant(principal.tenant_id) as db:
        service = LedgerService(db, principal)
        row = await service.get(agent_session_id, context_id)
        rendering = await service.render(row) if render else None
        return context_record_read(row, None if rendering is None else rendered_read(rendering))
