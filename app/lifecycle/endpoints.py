"""HTTP route of redaction: ``POST /v1/sessions/{id}/messages/{seq}:redact``."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path

from app.deps import DatabaseDep
from app.lifecycle.schemas import RedactCreate, RedactedCounts, RedactionRead
from app.lifecycle.service import RedactionService
from app.tenancy.auth import Writer
from app.validation import SEQ_MAX
from app.web.problems import TENANT_ROUTE, WITH_BODY, problems
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/v1/sessions",
    tags=["sessions"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE),
)


@router.post("/{agent_session_id}/messages/{seq}:redact", responses=problems(404, 409, *WITH_BODY))
async def redact_message(
    agent_session_id: uuid.UUID,
    seq: Annotated[int, Path(ge=1, le=SEQ_MAX)],
    principal: Writer,
    database: DatabaseDep,
    body: RedactCreate | None = None,
) -> RedactionRead:
    """Replace a message's content with ``[redacted]`` everywhere it is stored or indexed (live
    or archived), keeping its seq and role, and record who redacted it, when and why. A 409
    while an archive covering it is being generated."""
    async with database.tenant(principal.tenant_id) as db:
        done = await RedactionService(db, principal).redact(
            agent_session_id, seq, None if body is None else body.reason
        )
    counts = done.counts
    return RedactionRead(
        seq=done.row.seq,
        role=done.role,
        archived=done.archived,
        redacted_at=done.row.redacted_at,
        redacted_by=done.row.redacted_by,
        reason=done.row.reason,
        already_redacted=done.already_redacted,
        redacted=RedactedCounts(
            working_memory_items=counts.working_memory_items,
            archives=counts.archives,
            memories=counts.memories,
            memory_events=counts.memory_events,
            pins=counts.pins,
            idempotency_answers=counts.idempotency_answers,
        ),
    )
