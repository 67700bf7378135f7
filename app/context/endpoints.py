"""HTTP routes for the assembled context and compact (``/v1/sessions/{id}/context|compact``).

Owns the query parameters and the transactions of a request; never decides what a context holds.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from app.archives import flows
from app.archives.dependencies import WorkerDep
from app.context.budget import (
    DEFAULT_TOKEN_BUDGET,
    MAX_TOKEN_BUDGET,
    Budget,
    InvalidBudget,
    plan_budget,
)
from app.context.clearing import MAX_EXCLUDED_TOOLS, Clearing, excluded_tools
from app.context.fill import DEFAULT_FILL
from app.context.presenter import context_read
from app.context.schemas import CompactCommit, CompactRead, ContextRead
from app.context.service import ContextService, RecallRequest
from app.deps import DatabaseDep, SettingsDep
from app.errors import InvalidInput
from app.ledger.service import LedgerService
from app.memories.dependencies import EmbedderDep
from app.memories.service import RECALL_LIMIT, embed_query
from app.tenancy.auth import Reader, Writer
from app.web.problems import TENANT_ROUTE, problems
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/v1/sessions",
    tags=["context"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE, 404, 422),
)


async def context_budget(
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


async def context_clearing(
    agent_session_id: uuid.UUID,
    clear_tool_results: Annotated[
        int | None,
        Query(
            ge=0,
            le=10_000,
            description="keep the newest K tool results whole and send older ones as a one-line "
            "placeholder naming the tool, its size and how to read it (default: off)",
        ),
    ] = None,
    clear_tool_results_exclude: Annotated[
        list[str] | None,
        Query(
            max_length=MAX_EXCLUDED_TOOLS,
            description="tool names whose results are never cleared (repeat, or comma-separated)",
        ),
    ] = None,
) -> Clearing | None:
    if clear_tool_results is None:
        if clear_tool_results_exclude:
            message = "clear_tool_results_exclude needs clear_tool_results"
            raise InvalidInput(
                message, errors=[{"loc": ["query", "clear_tool_results_exclude"], "msg": message}]
            )
        return None
    return Clearing(
        clear_tool_results,
        f"/v1/sessions/{agent_session_id}/messages",
        excluded_tools(clear_tool_results_exclude or ()),
    )


ContextClearing = Annotated[Clearing | None, Depends(context_clearing)]
Record = Annotated[
    bool | None,
    Query(
        description="record what this context was made of in the context ledger (one row, no "
        "copy of any text); the answer's context_id names it (see docs/context.md). Left out: "
        "as the agent session's record_contexts says"
    ),
]
Fill = Annotated[
    bool,
    Query(
        description="give the room left under the budget to the newest raw messages the summary "
        "already covers (see docs/context.md)"
    ),
]


@router.get("/{agent_session_id}/context")
async def get_context(
    agent_session_id: uuid.UUID,
    principal: Reader,
    database: DatabaseDep,
    settings: SettingsDep,
    embedder: EmbedderDep,
    budget: ContextBudget,
    recall: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=2000,
            description="add the user's long-term memories most relevant to this text as a "
            "[Relevant Memories] message after the summary",
        ),
    ] = None,
    recall_limit: Annotated[int, Query(ge=1, le=RECALL_LIMIT)] = RECALL_LIMIT,
    recall_min_score: Annotated[
        float | None,
        Query(
            ge=-1, le=1, description="least cosine similarity (default WORKMEM_MEMORY_MIN_SCORE)"
        ),
    ] = None,
    fill: Fill = DEFAULT_FILL,
    clearing: ContextClearing = None,
    record: Record = None,
) -> ContextRead:
    request = None
    if recall is not None:
        # Embedded before the transaction opens: the embedder may call a server.
        request = RecallRequest(
            await embed_query(embedder, recall, name="recall"),
            limit=recall_limit,
            min_score=settings.memory_min_score if recall_min_score is None else recall_min_score,
        )
    async with database.tenant(principal.tenant_id) as db:
        context = await ContextService(db, principal).assemble(
            agent_session_id, budget, request, fill=fill, clearing=clearing
        )
        context_id = await LedgerService(db, principal).record_if(context, record, source="context")
    return context_read(context, context_id)


@router.post("/{agent_session_id}/compact")
async def compact(
    agent_session_id: uuid.UUID,
    principal: Writer,
    database: DatabaseDep,
    settings: SettingsDep,
    worker: WorkerDep,
    budget: ContextBudget,
    wait_timeout_s: Annotated[float | None, Query(gt=0, le=600)] = None,
    fill: Fill = DEFAULT_FILL,
    clearing: ContextClearing = None,
    record: Record = None,
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
        context = await ContextService(db, principal).assemble(
            agent_session_id, budget, fill=fill, clearing=clearing
        )
        context_id = await LedgerService(db, principal).record_if(context, record, source="compact")
    return CompactRead(**dict(context_read(context, context_id)), commit=commit)
