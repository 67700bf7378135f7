"""HTTP routes for agent sessions and their messages (``/v1/sessions``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status
from pydantic import AfterValidator, BaseModel

from app.config import Settings
from app.deps import DatabaseDep, SettingsDep
from app.idempotency.dependencies import IdempotencyKeyHeader, request_key_of
from app.idempotency.responses import JSON, answered
from app.idempotency.service import Answer
from app.sessions.append_route import SessionsRoute, direct_append
from app.sessions.dependencies import APPEND_FLOW
from app.sessions.group_commit import Keyed
from app.sessions.presenter import agent_session_read
from app.sessions.retraction import RetractionService
from app.sessions.schemas import (
    AgentSessionCreate,
    AgentSessionPage,
    AgentSessionRead,
    AgentSessionUpdate,
    AppendResult,
    BatchAppendResult,
    MessageBatchCreate,
    MessageCreate,
    MessagePage,
    MessageRead,
    RetractCreate,
    RetractionRead,
)
from app.sessions.service import AgentSessionService, AppendOutcome, Limits
from app.tenancy.auth import Reader, Writer
from app.validation import SEQ_MAX, require_storable
from app.web.problems import TENANT_ROUTE, WITH_BODY, problems

router = APIRouter(
    prefix="/v1/sessions",
    tags=["sessions"],
    route_class=SessionsRoute,
    responses=problems(*TENANT_ROUTE),
)


def _storable_label(value: str | None) -> str | None:
    require_storable(value)
    return value


Label = Annotated[
    str | None,
    Query(min_length=1, max_length=256, description="exact match"),
    AfterValidator(_storable_label),
]


def limits(settings: Settings) -> Limits:
    return Limits.from_settings(settings)


@router.post("", status_code=status.HTTP_201_CREATED, responses=problems(409, *WITH_BODY))
async def create_agent_session(
    body: AgentSessionCreate,
    principal: Writer,
    database: DatabaseDep,
    settings: SettingsDep,
) -> AgentSessionRead:
    async with database.tenant(principal.tenant_id) as db:
        row = await AgentSessionService(db, principal, limits(settings)).create(body)
        return agent_session_read(row)


@router.get("", responses=problems(422))
async def list_agent_sessions(
    principal: Reader,
    database: DatabaseDep,
    user_id: Label = None,
    agent_id: Label = None,
    external_id: Label = None,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> AgentSessionPage:
    async with database.tenant(principal.tenant_id) as db:
        rows, next_cursor = await AgentSessionService(db, principal).page(
            user_id=user_id, agent_id=agent_id, external_id=external_id, cursor=cursor, limit=limit
        )
    items = [agent_session_read(row, newest) for row, newest in rows]
    return AgentSessionPage(items=items, next_cursor=next_cursor)


@router.get("/{agent_session_id}", responses=problems(404, 422))
async def get_agent_session(
    agent_session_id: uuid.UUID, principal: Reader, database: DatabaseDep
) -> AgentSessionRead:
    async with database.tenant(principal.tenant_id) as db:
        row, newest = await AgentSessionService(db, principal).get_with_newest_archive(
            agent_session_id
        )
    return agent_session_read(row, newest)


@router.patch("/{agent_session_id}", responses=problems(404, *WITH_BODY))
async def update_agent_session(
    agent_session_id: uuid.UUID, body: AgentSessionUpdate, principal: Writer, database: DatabaseDep
) -> AgentSessionRead:
    """Change what the body names (a field left out stays): the agent session's own memory
    policy, which its next archive obeys, and whether its contexts are recorded by default."""
    async with database.tenant(principal.tenant_id) as db:
        service = AgentSessionService(db, principal)
        if "memory_policy" in body.model_fields_set:
            policy = None if body.memory_policy is None else body.memory_policy.policy()
            await service.set_memory_policy(agent_session_id, policy)
        if "record_contexts" in body.model_fields_set:
            await service.set_record_contexts(agent_session_id, body.record_contexts)
        row, newest = await service.get_with_newest_archive(agent_session_id)
    return agent_session_read(row, newest)


@router.delete(
    "/{agent_session_id}", status_code=status.HTTP_204_NO_CONTENT, responses=problems(404, 422)
)
async def delete_agent_session(
    agent_session_id: uuid.UUID, principal: Writer, database: DatabaseDep
) -> Response:
    async with database.tenant(principal.tenant_id) as db:
        await AgentSessionService(db, principal).delete(agent_session_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


async def _append(
    agent_session_id: uuid.UUID,
    messages: list[MessageCreate],
    principal: Writer,
    request: Request,
    idempotency_key: str | None,
    render: Callable[[AppendOutcome], bytes],
) -> Response:
    # The append routes read their flow and key here rather than as dependencies: resolving a
    # dependency costs FastAPI more than what these do, and this is the hottest path.
    flow = APPEND_FLOW.get(request.app)
    request_key = await request_key_of(request, principal, idempotency_key)
    keyed = None if request_key is None else Keyed(request_key, render)
    settled = await flow.append(principal, agent_session_id, messages, keyed)
    if isinstance(settled, Answer):
        return answered(settled)
    return Response(render(settled), status_code=status.HTTP_201_CREATED, media_type=JSON)


def rendered(body: BaseModel) -> bytes:
    """An append's answer, serialised once by pydantic itself: the append path skips FastAPI's
    re-validation of a response it has just built (the route declares the model). It cannot
    fail: every value in it was bounded by validation before anything was stored."""
    return body.model_dump_json().encode()


@router.post(
    "/{agent_session_id}/messages",
    status_code=status.HTTP_201_CREATED,
    response_model=AppendResult,
    responses=problems(404, 409, *WITH_BODY),
)
@direct_append(MessageCreate)
async def append_message(
    agent_session_id: uuid.UUID,
    body: MessageCreate,
    principal: Writer,
    request: Request,
    idempotency_key: IdempotencyKeyHeader = None,
) -> Response:
    def render(outcome: AppendOutcome) -> bytes:
        return rendered(
            AppendResult(
                message=MessageRead.from_stored(
                    outcome.messages[0], archived_upto_seq=outcome.archived_upto_seq
                ),
                pending_tokens=outcome.pending_tokens,
                live_message_count=outcome.live_message_count,
            )
        )

    return await _append(agent_session_id, [body], principal, request, idempotency_key, render)


@router.post(
    "/{agent_session_id}/messages:batch",
    status_code=status.HTTP_201_CREATED,
    response_model=BatchAppendResult,
    responses=problems(404, 409, *WITH_BODY),
)
@direct_append(MessageBatchCreate)
async def append_messages(
    agent_session_id: uuid.UUID,
    body: MessageBatchCreate,
    principal: Writer,
    request: Request,
    idempotency_key: IdempotencyKeyHeader = None,
) -> Response:
    def render(outcome: AppendOutcome) -> bytes:
        return rendered(
            BatchAppendResult(
                messages=[
                    MessageRead.from_stored(m, archived_upto_seq=outcome.archived_upto_seq)
                    for m in outcome.messages
                ],
                pending_tokens=outcome.pending_tokens,
                live_message_count=outcome.live_message_count,
            )
        )

    return await _append(
        agent_session_id, body.messages, principal, request, idempotency_key, render
    )


@router.get("/{agent_session_id}/messages", responses=problems(404, 422))
async def read_messages(
    agent_session_id: uuid.UUID,
    principal: Reader,
    database: DatabaseDep,
    after_seq: Annotated[int, Query(ge=0, le=SEQ_MAX)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> MessagePage:
    async with database.tenant(principal.tenant_id) as db:
        agent_session, rows = await AgentSessionService(db, principal).read_messages(
            agent_session_id, after_seq=after_seq, limit=limit
        )
    archived = agent_session.archived_upto_seq
    items = [MessageRead.from_stored(row, archived_upto_seq=archived) for row in rows]
    next_after = (
        items[-1].seq if len(items) == limit and items[-1].seq < agent_session.last_seq else None
    )
    return MessagePage(items=items, next_after_seq=next_after)


# --- retraction: the append-only "take back the newest message" ------------------------------


@router.post("/{agent_session_id}/messages:retract", responses=problems(404, 409, *WITH_BODY))
async def retract_message(
    agent_session_id: uuid.UUID,
    principal: Writer,
    database: DatabaseDep,
    body: RetractCreate | None = None,
) -> RetractionRead:
    """Retract a live message (default: the newest not retracted yet). It stays stored; the
    context and the next working memory leave it out. An archived message is a 409."""
    async with database.tenant(principal.tenant_id) as db:
        done = await RetractionService(db, principal).retract(
            agent_session_id, None if body is None else body.seq
        )
    if done is None:
        return RetractionRead(retracted=None, retracted_at=None)
    return RetractionRead(
        retracted=MessageRead.from_stored(done.message, archived_upto_seq=done.archived_upto_seq),
        retracted_at=done.retracted_at,
    )
