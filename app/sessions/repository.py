"""SQL for agent sessions and messages, scoped to one tenant (and optionally one user).

Row-level security enforces the tenant too; the explicit filters keep plans index-only and make
intent visible. Messages come back as ``StoredMessage`` values, never as ORM rows. The append
path is the one place that runs SQL on the driver connection (see ``docs/database.md``).
Flushes, never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb
from sqlalchemy import Row, and_, delete, func, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import driver
from app.models import AgentSession, Archive, Message
from app.sessions.records import NewestArchive, StoredMessage
from app.tenancy.principal import Scope


@dataclass(frozen=True, slots=True)
class AppendState:
    """The counters an append reads under the row lock, the token count of the message that
    the first appended message pushes out of the keep window (``None`` when none does), and the
    transaction's ``now()`` (the ``created_at`` of messages that do not bring their own)."""

    last_seq: int
    archived_upto_seq: int
    keep_recent_count: int
    pending_tokens: int
    total_tokens: int
    turn_count: int
    first_leaving_tokens: int | None
    now: datetime


# The append path runs these on every message, on the driver connection (``app.db.driver``):
# row-level security still applies, as they run inside the tenant transaction.
_LOCK_FOR_APPEND = """
SELECT s.last_seq, s.archived_upto_seq, s.keep_recent_count, s.pending_tokens, s.total_tokens,
       s.turn_count,
       (SELECT m.token_count FROM messages m
         WHERE m.tenant_id = s.tenant_id AND m.agent_session_id = s.agent_session_id
           AND m.seq = s.last_seq + 1 - s.keep_recent_count),
       now()
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
       u.content_text, u.metadata, u.created_at
FROM unnest(%(seqs)s::bigint[], %(roles)s::text[], %(turns)s::int[], %(messages)s::jsonb[],
            %(token_counts)s::int[], %(texts)s::text[], %(metadata)s::jsonb[],
            %(created_at)s::timestamptz[])
     AS u(seq, role, turn, message, token_count, content_text, metadata, created_at)
ORDER BY u.seq
"""

_NEWEST_ARCHIVE_COLUMNS = (Archive.archive_seq, Archive.start_seq, Archive.end_seq, Archive.status)


def _with_newest(row: Row[Any]) -> tuple[AgentSession, NewestArchive | None]:
    agent_session, archive_seq, start_seq, end_seq, status = tuple(row)
    if archive_seq is None:
        return agent_session, None
    return agent_session, NewestArchive(archive_seq, start_seq, end_seq, str(status))


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
        created_at: datetime | None = None,
    ) -> AgentSession | None:
        """The new row, or ``None`` when ``external_id`` is already taken in this tenant."""
        values: dict[str, Any] = {
            "tenant_id": self.scope.tenant_id,
            "external_id": external_id,
            "user_id": user_id,
            "agent_id": agent_id,
            "metadata_": metadata,
            "keep_recent_count": keep_recent_count,
        }
        if created_at is not None:
            values["created_at"] = created_at
        statement = (
            pg_insert(AgentSession)
            .values(**values)
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
        return (await self.db.execute(statement)).scalar_one_or_none()

    async def get_by_external_id(self, external_id: str) -> AgentSession | None:
        """By the tenant's unique ``external_id`` (one index lookup, whatever the tenant holds)."""
        return (
            await self.db.execute(
                select(AgentSession).where(
                    AgentSession.external_id == external_id, *self._visible()
                )
            )
        ).scalar_one_or_none()

    def _with_newest_archive(self) -> Any:
        # The newest archive is the one numbered archive_count: one index lookup per row, in the
        # same statement as the agent session.
        return select(AgentSession, *_NEWEST_ARCHIVE_COLUMNS).outerjoin(
            Archive,
            and_(
                Archive.tenant_id == AgentSession.tenant_id,
                Archive.agent_session_id == AgentSession.agent_session_id,
                Archive.archive_seq == AgentSession.archive_count,
            ),
        )

    async def get_with_newest_archive(
        self, agent_session_id: uuid.UUID
    ) -> tuple[AgentSession, NewestArchive | None] | None:
        statement = self._with_newest_archive().where(
            AgentSession.agent_session_id == agent_session_id, *self._visible()
        )
        row = (await self.db.execute(statement)).first()
        return None if row is None else _with_newest(row)

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
    ) -> list[tuple[AgentSession, NewestArchive | None]]:
        statement = self._with_newest_archive().where(*self._visible())
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
        rows = (await self.db.execute(statement.limit(limit))).all()
        return [_with_newest(row) for row in rows]

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


_STORED_COLUMNS = (
    Message.seq,
    Message.role,
    Message.turn,
    Message.message,
    Message.token_count,
    Message.metadata_,
    Message.created_at,
)


class MessageRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    def _of(self, agent_session_id: uuid.UUID) -> list[Any]:
        return [
            Message.tenant_id == self.scope.tenant_id,
            Message.agent_session_id == agent_session_id,
        ]

    async def insert_many(
        self,
        agent_session_id: uuid.UUID,
        messages: Sequence[StoredMessage],
        texts: Sequence[str],
    ) -> None:
        """Insert the messages (with their plain ``texts`` for search) in one statement."""
        await (await driver(self.db)).execute(
            _INSERT_MESSAGES,
            {
                "tenant_id": self.scope.tenant_id,
                "agent_session_id": agent_session_id,
                "seqs": [m.seq for m in messages],
                "roles": [m.role for m in messages],
                "turns": [m.turn for m in messages],
                "messages": [Jsonb(m.message) for m in messages],
                "token_counts": [m.token_count for m in messages],
                "texts": list(texts),
                "metadata": [None if m.metadata is None else Jsonb(m.metadata) for m in messages],
                "created_at": [m.created_at for m in messages],
            },
        )

    async def token_counts(
        self, agent_session_id: uuid.UUID, seqs: Sequence[int]
    ) -> dict[int, int]:
        if not seqs:
            return {}
        result = await self.db.execute(
            select(Message.seq, Message.token_count).where(
                *self._of(agent_session_id), Message.seq.in_(list(seqs))
            )
        )
        return {row[0]: row[1] for row in result.all()}

    async def sum_tokens(self, agent_session_id: uuid.UUID, after_seq: int, upto_seq: int) -> int:
        """Tokens of the messages with ``after_seq < seq <= upto_seq``."""
        if upto_seq <= after_seq:
            return 0
        total = await self.db.scalar(
            select(func.coalesce(func.sum(Message.token_count), 0)).where(
                *self._of(agent_session_id), Message.seq > after_seq, Message.seq <= upto_seq
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
    ) -> list[StoredMessage]:
        """Messages with ``after_seq < seq [<= upto_seq]``, oldest first, at most ``limit``."""
        statement = select(*_STORED_COLUMNS).where(
            *self._of(agent_session_id), Message.seq > after_seq
        )
        if upto_seq is not None:
            statement = statement.where(Message.seq <= upto_seq)
        rows = await self.db.execute(statement.order_by(Message.seq).limit(limit))
        return [StoredMessage(*row) for row in rows.all()]
