"""HTTP routes for agent sessions and their messages (``/v1/sessions``)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Response, status
from pydantic import BaseModel

from app.config import Settings
from app.deps import DatabaseDep, GroupCommitDep, SettingsDep
from app.sessions.group_commit import GroupCommit
from app.sessions.retraction import RetractionService
from app.sessions.schemas import (
    AgentSessionCreate,
    AgentSessionPage,
    AgentSessionRead,
    AppendResult,
    BatchAppendResult,
    MessageBatchCreate,
    MessageCreate,
    MessagePage,
    MessageRead,
    RetractCreate,
    RetractionRead,
)
from app.sessions.service import (
    AgentSessionService,
    AppendOutcome,
    Limits,
    append_prepared,
    prepare_append,
)
from app.tenancy.auth import Reader, Writer

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])


def limits(settings: Settings) -> Limits:
    return Limits.from_settings(settings)


@router.post("", status_code=status.HTTP_201_CREATED)
async def create_agent_session(
    body: AgentSessionCreate, principal: Writer, database: DatabaseDep, settings: SettingsDep
) -> AgentSessionRead:
    async with database.tenant(principal.tenant_id) as db:
        row = await AgentSessionService(db, principal, limits(settings)).create(body)
        return AgentSessionRead.from_row(row)


@router.get("")
async def list_agent_sessions(
    principal: Reader,
    database: DatabaseDep,
    user_id: str | None = None,
    agent_id: str | None = None,
    external_id: str | None = None,
    cursor: str | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> AgentSessionPage:
    async with database.tenant(principal.tenant_id) as db:
        rows, next_cursor = await AgentSessionService(db, principal).page(
            user_id=user_id, agent_id=agent_id, external_id=external_id, cursor=cursor, limit=limit
        )
    items = [AgentSessionRead.from_row(row, newest) for row, newest in rows]
    return AgentSessionPage(items=items, next_cursor=next_cursor)


@router.get("/{agent_session_id}")
async def get_agent_session(
    agent_session_id: uuid.UUID, principal: Reader, database: DatabaseDep
) -> AgentSessionRead:
    async with database.tenant(principal.tenant_id) as db:
        row, newest = await AgentSessionService(db, principal).get_with_newest_archive(
            agent_session_id
        )
    return AgentSessionRead.from_row(row, newest)


@router.delete("/{agent_session_id}", status_code=status.HTTP_204_NO_CONTENT)
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
    database: DatabaseDep,
    settings: Settings,
    group_commit: GroupCommit | None,
) -> AppendOutcome:
    # Validation and token counting first, with no connection held; then one statement, either
    # a transaction of its own on an autocommit connection or a part of the next group commit.
    prepared = prepare_append(messages, limits(settings))
    if group_commit is not None:
        return await group_commit.append(principal.scope, agent_session_id, prepared)
    async with database.connection() as connection:
        return await append_prepared(connection, principal.scope, agent_session_id, prepared)


def created(body: BaseModel) -> Response:
    """A 201 with the body serialised once, by pydantic itself: the append path skips
    FastAPI's re-validation of a response it has just built (the route declares the model)."""
    return Response(
        body.model_dump_json(), status_code=status.HTTP_201_CREATED, media_type="application/json"
    )


@router.post(
    "/{agent_session_id}/messages",
    status_code=status.HTTP_201_CREATED,
    response_model=AppendResult,
)
async def append_message(
    agent_session_id: uuid.UUID,
    body: MessageCreate,
    principal: Writer,
    database: DatabaseDep,
    settings: SettingsDep,
    group_commit: GroupCommitDep,
) -> Response:
    outcome = await _append(agent_session_id, [body], principal, database, settings, group_commit)
    return created(
        AppendResult(
            message=MessageRead.from_stored(
                outcome.messages[0], archived_upto_seq=outcome.archived_upto_seq
            ),
            pending_tokens=outcome.pending_tokens,
            live_message_count=outcome.live_message_count,
        )
    )


@router.post(
    "/{agent_session_id}/messages:batch",
    status_code=status.HTTP_201_CREATED,
    response_model=BatchAppendResult,
)
async def append_messages(
    agent_session_id: uuid.UUID,
    body: MessageBatchCreate,
    principal: Writer,
    database: DatabaseDep,
    settings: SettingsDep,
    group_commit: GroupCommitDep,
) -> Response:
    outcome = await _append(
        agent_session_id, body.messages, principal, database, settings, group_commit
    )
    return created(
        BatchAppendResult(
            messages=[
                MessageRead.from_stored(m, archived_upto_seq=outcome.archived_upto_seq)
                for m in outcome.messages
            ],
            pending_tokens=outcome.pending_tokens,
            live_message_count=outcome.live_message_count,
        )
    )


@router.get("/{agent_session_id}/messages")
async def read_messages(
    agent_session_id: uuid.UUID,
    principal: Reader,
    database: DatabaseDep,
    after_seq: Annotated[int, Query(ge=0, le=2**63 - 1)] = 0,
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


@router.post("/{agent_session_id}/messages:retract")
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
