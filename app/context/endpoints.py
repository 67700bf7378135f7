"""HTTP routes for the assembled context and compact (``/v1/sessions/{id}/context|compact``).

Owns the query parameters and the transactions of a request; never decides what a context holds.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from app.archives import flows
from app.context.budget import (
    DEFAULT_TOKEN_BUDGET,
    MAX_TOKEN_BUDGET,
    Budget,
    InvalidBudget,
    plan_budget,
)
from app.context.schemas import CompactCommit, CompactRead, ContextRead
from app.context.service import ContextService
from app.deps import DatabaseDep, SettingsDep, WorkerDep
from app.errors import InvalidInput
from app.tenancy.auth import Reader, Writer
from app.web.problems import TENANT_ROUTE, problems
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/v1/sessions",
    tags=["context"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE, 404, 422),
)


def context_budget(
    token_budget: Annotated[
        int,
        Query(
            ge=1,
            le=MAX_TOKEN_BUDGET,
            description="tokens the model call may use in all: context plus reply",
        ),
    ] = DEFAULT_TOKEN_BUDGET,
    reserve_tokens: Annotated[
        int | None,
        Query(
            ge=0,
            le=MAX_TOKEN_BUDGET,
            description="tokens kept for the reply (default: 15 % of the budget, at least "
            "20 000, at most half); must be less than token_budget",
        ),
    ] = None,
) -> Budget:
    try:
        return plan_budget(token_budget, reserve_tokens)
    except InvalidBudget as error:
        raise InvalidInput(
            error.message,
            errors=[{"loc": ["query", error.field_name], "msg": error.message}],
        ) from error


ContextBudget = Annotated[Budget, Depends(context_budget)]


@router.get("/{agent_session_id}/context")
async def get_context(
    agent_session_id: uuid.UUID, principal: Reader, database: DatabaseDep, budget: ContextBudget
) -> ContextRead:
    async with database.tenant(principal.tenant_id) as db:
        context = await ContextService(db, principal).assemble(agent_session_id, budget)
    return ContextRead.from_assembled(context)


@router.post("/{agent_session_id}/compact")
async def compact(
    agent_session_id: uuid.UUID,
    principal: Writer,
    database: DatabaseDep,
    settings: SettingsDep,
    worker: WorkerDep,
    budget: ContextBudget,
    wait_timeout_s: Annotated[float | None, Query(gt=0, le=600)] = None,
) -> CompactRead:
    """Commit every live message (``keep_recent_count`` 0), wait for the working memory, then
    answer with the context. A wait that times out still answers: the archive's raw messages are
    in the context until its working memory is done."""
    result = await flows.commit(
        database,
        worker,
        principal,
        agent_session_id,
        keep=0,
        wait=True,
        timeout_s=wait_timeout_s or settings.commit_wait_timeout_s,
        with_working_memory=False,
    )
    if result.archive is None:
        commit = CompactCommit(status="skipped", reason=result.outcome.skipped, archive_seq=None)
    else:
        commit = CompactCommit(status=result.archive.status, archive_seq=result.archive.archive_seq)
    async with database.tenant(principal.tenant_id) as db:
        context = await ContextService(db, principal).assemble(agent_session_id, budget)
    return CompactRead(**dict(ContextRead.from_assembled(context)), commit=commit)
