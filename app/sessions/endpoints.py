"""HTTP routes for agent sessions and their messages (``/v1/sessions``)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from app.config import Settings
from app.deps import DatabaseDep, SettingsDep
from app.models import AgentSession, Archive, Message
from app.sessions.repository import NewMessage
from app.sessions.schemas import (
    AgentSessionCreate,
    AgentSessionPage,
    AgentSessionRead,
    AppendResult,
    ArchiveBrief,
    BatchAppendResult,
    MessageBatchCreate,
    MessageCreate,
    MessagePage,
    MessageRead,
)
from app.sessions.service import AgentSessionService, AppendOutcome, Limits, StoredMessage
from app.tenancy.auth import Reader, Writer

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])


def limits(settings: Settings) -> Limits:
    return Limits(
        max_message_bytes=settings.max_message_bytes,
        max_batch_messages=settings.max_batch_messages,
        default_keep_recent_count=settings.default_keep_recent_count,
    )


def agent_session_read(row: AgentSession, newest: Archive | None) -> AgentSessionRead:
    brief = None
    if newest is not None:
        brief = ArchiveBrief(
            archive_seq=newest.archive_seq,
            start_seq=newest.start_seq,
            end_seq=newest.end_seq,
            status=str(getattr(newest, "status", "done")),
        )
    return AgentSessionRead(
        id=row.agent_session_id,
        external_id=row.external_id,
        user_id=row.user_id,
        agent_id=row.agent_id,
        metadata=row.metadata_,
        keep_recent_count=row.keep_recent_count,
        message_count=row.last_seq,
        live_message_count=row.last_seq - row.archived_upto_seq,
        pending_tokens=row.pending_tokens,
        total_tokens=row.total_tokens,
        archive_count=row.archive_count,
        newest_archive=brief,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def message_read(item: Message | StoredMessage, archived_upto_seq: int) -> MessageRead:
    """A stored row, or a message just appended (whose ``created_at`` came back from the insert)."""
    row: Message | NewMessage
    if isinstance(item, StoredMessage):
        row, metadata, created_at = item.row, item.row.metadata, item.created_at
    else:
        row, metadata, created_at = item, item.metadata_, item.created_at
    return MessageRead(
        seq=row.seq,
        role=row.role,
        turn=row.turn,
        token_count=row.token_count,
        message=row.message,
        metadata=metadata,
        created_at=created_at,
        archived=row.seq <= archived_upto_seq,
    )


@router.post("", status_code=status.HTTP_201_CREATED)
async def create_agent_session(
    body: AgentSessionCreate, principal: Writer, database: DatabaseDep, settings: SettingsDep
) -> AgentSessionRead:
    async with database.tenant(principal.tenant_id) as db:
        row = await AgentSessionService(db, principal, limits(settings)).create(body)
        return agent_session_read(row, None)


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
        service = AgentSessionService(db, principal)
        rows, next_cursor = await service.page(
            user_id=user_id, agent_id=agent_id, external_id=external_id, cursor=cursor, limit=limit
        )
        items = [agent_session_read(row, await service.newest_archive(row)) for row in rows]
    return AgentSessionPage(items=items, next_cursor=next_cursor)


@router.get("/{agent_session_id}")
async def get_agent_session(
    agent_session_id: uuid.UUID, principal: Reader, database: DatabaseDep
) -> AgentSessionRead:
    async with database.tenant(principal.tenant_id) as db:
        service = AgentSessionService(db, principal)
        row = await service.get(agent_session_id)
        return agent_session_read(row, await service.newest_archive(row))


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
) -> AppendOutcome:
    async with database.tenant(principal.tenant_id) as db:
        service = AgentSessionService(db, principal, limits(settings))
        return await service.append(agent_session_id, messages)


@router.post("/{agent_session_id}/messages", status_code=status.HTTP_201_CREATED)
async def append_message(
    agent_session_id: uuid.UUID,
    body: MessageCreate,
    principal: Writer,
    database: DatabaseDep,
    settings: SettingsDep,
) -> AppendResult:
    outcome = await _append(agent_session_id, [body], principal, database, settings)
    return AppendResult(
        message=message_read(outcome.messages[0], outcome.archived_upto_seq),
        pending_tokens=outcome.pending_tokens,
        live_message_count=outcome.live_message_count,
    )


@router.post("/{agent_session_id}/messages:batch", status_code=status.HTTP_201_CREATED)
async def append_messages(
    agent_session_id: uuid.UUID,
    body: MessageBatchCreate,
    principal: Writer,
    database: DatabaseDep,
    settings: SettingsDep,
) -> BatchAppendResult:
    outcome = await _append(agent_session_id, body.messages, principal, database, settings)
    return BatchAppendResult(
        messages=[message_read(m, outcome.archived_upto_seq) for m in outcome.messages],
        pending_tokens=outcome.pending_tokens,
        live_message_count=outcome.live_message_count,
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
        service = AgentSessionService(db, principal)
        agent_session, rows = await service.read_messages(
            agent_session_id, after_seq=after_seq, limit=limit
        )
        items = [message_read(row, agent_session.archived_upto_seq) for row in rows]
    next_after = (
        items[-1].seq if len(items) == limit and items[-1].seq < agent_session.last_seq else None
    )
    return MessagePage(items=items, next_after_seq=next_after)
