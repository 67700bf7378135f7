"""SQL for agent sessions and messages, scoped to one tenant (and optionally one user).

Row-level security enforces the tenant too; the explicit filters keep plans index-only and make
intent visible. Flushes, never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb
from sqlalchemy import (
    and_,
    delete,
    func,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import driver
from app.models import AgentSession, Archive, Message


@dataclass(frozen=True, slots=True)
class Scope:
    """What a credential may see: one tenant, and within it optionally one user's sessions."""

    tenant_id: uuid.UUID
    user_id: str | None = None


@dataclass(frozen=True, slots=True)
class NewMessage:
    seq: int
    role: str
    turn: int
    message: dict[str, Any]
    token_count: int
    content_text: str
    metadata: dict[str, Any] | None
    created_at: datetime | None


@dataclass(frozen=True, slots=True)
class AppendState:
    """The counters an append reads under the row lock, plus the token count of the message
    that the first appended message pushes out of the keep window (``None`` when none does)."""

    last_seq: int
    archived_upto_seq: int
    keep_recent_count: int
    pending_tokens: int
    total_tokens: int
    turn_count: int
    first_leaving_tokens: int | None


# The append path runs these on every message, on the driver connection (``app.db.driver``):
# row-level security still applies, as they run inside the tenant transaction.
_LOCK_FOR_APPEND = """
SELECT s.last_seq, s.archived_upto_seq, s.keep_recent_count, s.pending_tokens, s.total_tokens,
       s.turn_count,
       (SELECT m.token_count FROM messages m
         WHERE m.tenant_id = s.tenant_id AND m.agent_session_id = s.agent_session_id
           AND m.seq = s.last_seq + 1 - s.keep_recent_count)
FROM agent_sessions s
WHERE s.tenant_id = %(tenant_id)s AND s.agent_session_id = %(agent_session_id)s
  AND (%(user_id)s::text IS NULL OR s.user_id = %(user_id)s::text)
FOR UPDATE OF s
"""
_SAVE_COUNTERS = """
UPDATE agent_sessions
SET last_seq = %(last_seq)s, turn_count = %(turn_count)s, pending_tokens = %(pending_tokens)s,
    total_tokens = %(total_tokens)s, updated_at = now()
WHERE tenant_id = %(tenant_id)s AND agent_session_id = %(agent_session_id)s
"""
_INSERT_MESSAGES = """
INSERT INTO messages (tenant_id, agent_session_id, seq, role, turn, message, token_count,
                      content_text, metadata, created_at)
SELECT %(tenant_id)s, %(agent_session_id)s, u.seq, u.role, u.turn, u.message, u.token_count,
       u.content_text, u.metadata, coalesce(u.created_at, now())
FROM unnest(%(seqs)s::bigint[], %(roles)s::text[], %(turns)s::int[], %(messages)s::jsonb[],
            %(token_counts)s::int[], %(texts)s::text[], %(metadata)s::jsonb[],
            %(created_at)s::timestamptz[])
     AS u(seq, role, turn, message, token_count, content_text, metadata, created_at)
ORDER BY u.seq
RETURNING seq, created_at
"""


class AgentSessionRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    def _visible(self) -> list[Any]:
        conditions: list[Any] = [AgentSession.tenant_id == self.scope.tenant_id]
        if self.scope.user_id is not None:
            conditions.append(AgentSession.user_id == self.scope.user_id)
        return conditions

    async def insert(
        self,
        *,
        external_id: str | None,
        user_id: str | None,
        agent_id: str | None,
        metadata: dict[str, Any],
        keep_recent_count: int,
    ) -> AgentSession | None:
        """The new row, or ``None`` when ``external_id`` is already taken in this tenant."""
        statement = (
            pg_insert(AgentSession)
            .values(
                tenant_id=self.scope.tenant_id,
                external_id=external_id,
                user_id=user_id,
                agent_id=agent_id,
                metadata_=metadata,
                keep_recent_count=keep_recent_count,
            )
            .on_conflict_do_nothing(index_elements=["tenant_id", "external_id"])
            .returning(AgentSession)
        )
        return (await self.db.execute(statement)).scalar_one_or_none()

    async def get(self, agent_session_id: uuid.UUID, *, lock: bool = False) -> AgentSession | None:
        statement = select(AgentSession).where(
            AgentSession.agent_session_id == agent_session_id, *self._visible()
        )
        if lock:
            statement = statement.with_for_update()
        result = await self.db.execute(statement.execution_options(populate_existing=True))
        return result.scalar_one_or_none()

    async def lock_for_append(self, agent_session_id: uuid.UUID) -> AppendState | None:
        """Lock the row (appends and commits of one agent session serialise here) and read the
        counters, with the tokens of the message the next append pushes out of the keep window,
        in one round trip: this is the hot path."""
        cursor = await (await driver(self.db)).execute(
            _LOCK_FOR_APPEND,
            {
                "tenant_id": self.scope.tenant_id,
                "agent_session_id": agent_session_id,
                "user_id": self.scope.user_id,
            },
        )
        row = await cursor.fetchone()
        return None if row is None else AppendState(*row)

    async def page(
        self,
        *,
        user_id: str | None,
        agent_id: str | None,
        external_id: str | None,
        after: tuple[datetime, uuid.UUID] | None,
        limit: int,
    ) -> Sequence[AgentSession]:
        statement = select(AgentSession).where(*self._visible())
        if user_id is not None:
            statement = statement.where(AgentSession.user_id == user_id)
        if agent_id is not None:
            statement = statement.where(AgentSession.agent_id == agent_id)
        if external_id is not None:
            statement = statement.where(AgentSession.external_id == external_id)
        if after is not None:
            statement = statement.where(
                tuple_(AgentSession.created_at, AgentSession.agent_session_id) > tuple_(*after)
            )
        statement = statement.order_by(AgentSession.created_at, AgentSession.agent_session_id)
        return (await self.db.scalars(statement.limit(limit))).all()

    async def delete(self, agent_session_id: uuid.UUID) -> bool:
        result = await self.db.execute(
            delete(AgentSession)
            .where(AgentSession.agent_session_id == agent_session_id, *self._visible())
            .returning(AgentSession.agent_session_id)
        )
        return result.scalar_one_or_none() is not None

    async def save_counters(
        self,
        agent_session_id: uuid.UUID,
        *,
        last_seq: int,
        turn_count: int,
        pending_tokens: int,
        total_tokens: int,
    ) -> None:
        await (await driver(self.db)).execute(
            _SAVE_COUNTERS,
            {
                "tenant_id": self.scope.tenant_id,
                "agent_session_id": agent_session_id,
                "last_seq": last_seq,
                "turn_count": turn_count,
                "pending_tokens": pending_tokens,
                "total_tokens": total_tokens,
            },
        )

    async def save_commit(
        self,
        agent_session_id: uuid.UUID,
        *,
        keep_recent_count: int,
        pending_tokens: int,
        archived_upto_seq: int | None = None,
        archive_count: int | None = None,
        archived_tokens: int | None = None,
    ) -> None:
        values: dict[str, Any] = {
            "keep_recent_count": keep_recent_count,
            "pending_tokens": pending_tokens,
            "updated_at": func.now(),
        }
        if archived_upto_seq is not None:
            values.update(
                archived_upto_seq=archived_upto_seq,
                archive_count=archive_count,
                archived_tokens=archived_tokens,
            )
        await self.db.execute(
            update(AgentSession)
            .where(
                AgentSession.tenant_id == self.scope.tenant_id,
                AgentSession.agent_session_id == agent_session_id,
            )
            .values(**values)
        )

    async def set_pending_tokens(self, agent_session_id: uuid.UUID, pending_tokens: int) -> None:
        await self.db.execute(
            update(AgentSession)
            .where(
                AgentSession.tenant_id == self.scope.tenant_id,
                AgentSession.agent_session_id == agent_session_id,
            )
            .values(pending_tokens=pending_tokens)
        )

    async def newest_archive(self, agent_session: AgentSession) -> Archive | None:
        if agent_session.archive_count == 0:
            return None
        return await self.db.get(
            Archive,
            (self.scope.tenant_id, agent_session.agent_session_id, agent_session.archive_count),
        )


class MessageRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    async def insert_many(
        self, agent_session_id: uuid.UUID, rows: Sequence[NewMessage]
    ) -> dict[int, datetime]:
        """Insert the rows in one statement; returns each seq's stored ``created_at``."""
        cursor = await (await driver(self.db)).execute(
            _INSERT_MESSAGES,
            {
                "tenant_id": self.scope.tenant_id,
                "agent_session_id": agent_session_id,
                "seqs": [row.seq for row in rows],
                "roles": [row.role for row in rows],
                "turns": [row.turn for row in rows],
                "messages": [Jsonb(row.message) for row in rows],
                "token_counts": [row.token_count for row in rows],
                "texts": [row.content_text for row in rows],
                "metadata": [None if row.metadata is None else Jsonb(row.metadata) for row in rows],
                "created_at": [row.created_at for row in rows],
            },
        )
        return dict(await cursor.fetchall())

    async def token_counts(
        self, agent_session_id: uuid.UUID, seqs: Sequence[int]
    ) -> dict[int, int]:
        if not seqs:
            return {}
        result = await self.db.execute(
            select(Message.seq, Message.token_count).where(
                Message.tenant_id == self.scope.tenant_id,
                Message.agent_session_id == agent_session_id,
                Message.seq.in_(list(seqs)),
            )
        )
        return {row[0]: row[1] for row in result.all()}

    async def sum_tokens(self, agent_session_id: uuid.UUID, after_seq: int, upto_seq: int) -> int:
        """Tokens of the messages with ``after_seq < seq <= upto_seq``."""
        if upto_seq <= after_seq:
            return 0
        total = await self.db.scalar(
            select(func.coalesce(func.sum(Message.token_count), 0)).where(
                Message.tenant_id == self.scope.tenant_id,
                Message.agent_session_id == agent_session_id,
                and_(Message.seq > after_seq, Message.seq <= upto_seq),
            )
        )
        return int(total or 0)

    async def read(
        self,
        agent_session_id: uuid.UUID,
        *,
        after_seq: int,
        limit: int,
        upto_seq: int | None = None,
    ) -> Sequence[Message]:
        statement = select(Message).where(
            Message.tenant_id == self.scope.tenant_id,
            Message.agent_session_id == agent_session_id,
            Message.seq > after_seq,
        )
        if upto_seq is not None:
            statement = statement.where(Message.seq <= upto_seq)
        return (await self.db.scalars(statement.order_by(Message.seq).limit(limit))).all()
