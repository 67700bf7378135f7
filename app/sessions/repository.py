"""SQL for agent sessions and the append, scoped to one tenant (and optionally one user).

Row-level security enforces the tenant too; the explicit filters keep plans index-only and make
intent visible. Reading messages back is ``app.sessions.message_repository``. The append is the
one statement that runs on a bare psycopg connection (see ``docs/database.md``).
Flushes, never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from sqlalchemy import Row, Update, and_, delete, func, select, text, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import token_for
from app.errors import QuotaExceeded
from app.metrics import LIMITED
from app.models import AgentSession, AgentSessionLineage, Archive, ClaimableArchive
from app.sessions.records import NewestArchive
from app.tenancy.principal import Scope


@dataclass(frozen=True, slots=True)
class AppendedRow:
    """One appended message's seq, turn and stored time, with the agent session's counters
    after the whole append."""

    seq: int
    turn: int
    created_at: datetime
    pending_tokens: int
    archived_upto_seq: int
    last_seq: int


# The append is one statement (``workmem_append``): on an autocommit connection it is a whole
# transaction in one round trip. Its first arguments are the tenant and its token: the function
# enters the token for the rest of the transaction, verifies once that it is that tenant's
# (nothing is found otherwise) and keeps every statement it runs to that tenant; with a
# stored-bytes quota it checks and records it in the same step, under the tenant's quota lock.
_APPEND = """
SELECT seq, turn, created_at, pending_tokens, archived_upto_seq, last_seq
FROM workmem_append(%(tenant_id)s, %(token)s::text, %(agent_session_id)s, %(user_id)s,
                    %(roles)s::text[],
                    %(messages)s::jsonb[], %(token_counts)s::int[], %(texts)s::text[],
                    %(metadata)s::jsonb[], %(created_at)s::timestamptz[],
                    %(quota_bytes)s::bigint)
"""

# The same for one message, its fields sent as plain values: the driver adapts a scalar far
# more cheaply than a list whose element type it must first find out.
_APPEND_ONE = """
SELECT seq, turn, created_at, pending_tokens, archived_upto_seq, last_seq
FROM workmem_append(%(tenant_id)s, %(token)s::text, %(agent_session_id)s, %(user_id)s,
                    ARRAY[%(role)s::text],
                    ARRAY[%(message)s::jsonb], ARRAY[%(token_count)s::int], ARRAY[%(text)s::text],
                    ARRAY[%(metadata)s::jsonb], ARRAY[%(created_at)s::timestamptz],
                    %(quota_bytes)s::bigint)
"""

_QUOTA_LOCK = text("SELECT workmem_quota_lock(:tenant_id)")

QUOTA_SQLSTATE = "WMQ01"
"""What the append raises when the stored-bytes quota would be passed (nothing is stored)."""

QUOTA_RETRY_AFTER_S = 60.0


def quota_refusal(error: BaseException) -> BaseException:
    """The 429 a refused append stands for, or ``error`` itself."""
    if isinstance(error, psycopg.Error) and error.sqlstate == QUOTA_SQLSTATE:
        detail = error.diag.message_primary or "this tenant's stored-bytes quota is used up"
        LIMITED.labels("stored_bytes").inc()
        return QuotaExceeded(detail, retry_after_s=QUOTA_RETRY_AFTER_S)
    return error


async def start_append(
    connection: psycopg.AsyncConnection[Any],
    scope: Scope,
    agent_session_id: uuid.UUID,
    *,
    roles: Sequence[str],
    messages: Sequence[Mapping[str, Any]],
    token_counts: Sequence[int],
    texts: Sequence[str],
    metadata: Sequence[Mapping[str, Any] | None],
    created_at: Sequence[datetime | None],
    quota_bytes: int | None = None,
) -> psycopg.AsyncCursor[Any]:
    """Send the append; its rows are read with ``appended_rows`` (in pipeline mode, after
    the other statements of the group have been sent too). ``quota_bytes``: the tenant's
    stored-bytes quota, checked by the statement (429 when it would be passed)."""
    if len(roles) == 1:
        [meta] = metadata
        one: dict[str, Any] = {
            "tenant_id": scope.tenant_id,
            "token": token_for(scope.tenant_id),
            "agent_session_id": agent_session_id,
            "user_id": scope.user_id,
            "role": roles[0],
            "message": Jsonb(messages[0]),
            "token_count": token_counts[0],
            "text": texts[0],
            "metadata": None if meta is None else Jsonb(meta),
            "created_at": created_at[0],
            "quota_bytes": quota_bytes,
        }
        try:
            return await connection.execute(_APPEND_ONE, one)
        except psycopg.Error as error:
            raise quota_refusal(error) from error
    params = {
        "tenant_id": scope.tenant_id,
        "token": token_for(scope.tenant_id),
        "agent_session_id": agent_session_id,
        "user_id": scope.user_id,
        "roles": list(roles),
        "messages": [Jsonb(message) for message in messages],
        "token_counts": list(token_counts),
        "texts": list(texts),
        "metadata": [None if value is None else Jsonb(value) for value in metadata],
        "created_at": list(created_at),
        "quota_bytes": quota_bytes,
    }
    try:
        return await connection.execute(_APPEND, params)
    except psycopg.Error as error:
        raise quota_refusal(error) from error


async def appended_rows(cursor: psycopg.AsyncCursor[Any]) -> list[AppendedRow]:
    """One row per appended message; none when the agent session is not visible (missing, or
    another user's)."""
    try:
        return [AppendedRow(*row) for row in await cursor.fetchall()]
    except psycopg.Error as error:
        raise quota_refusal(error) from error


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
        memory_policy: dict[str, Any] | None = None,
        record_contexts: bool = False,
    ) -> AgentSession | None:
        """The new row, or ``None`` when this user (or, for no user, the tenant's unbound
        sessions) already has an agent session named ``external_id``."""
        values: dict[str, Any] = {
            "tenant_id": self.scope.tenant_id,
            "external_id": external_id,
            "user_id": user_id,
            "agent_id": agent_id,
            "metadata_": metadata,
            "keep_recent_count": keep_recent_count,
            "memory_policy": memory_policy,
            "record_contexts": record_contexts,
        }
        if created_at is not None:
            values["created_at"] = created_at
        statement = (
            pg_insert(AgentSession)
            .values(**values)
            .on_conflict_do_nothing(
                index_elements=["tenant_id", "user_id", "external_id"],
                index_where=AgentSession.external_id.is_not(None),
            )
            .returning(AgentSession)
        )
        return (await self.db.execute(statement)).scalar_one_or_none()

    async def lock_quota(self) -> None:
        """Take the tenant's quota lock until the transaction ends (the append takes it too):
        what is counted under it stays true until the write that follows is committed."""
        await self.db.execute(_QUOTA_LOCK, {"tenant_id": self.scope.tenant_id})

    async def lock_name(self, external_id: str) -> None:
        """Hold the name ``external_id`` of the tenant until the transaction ends: another
        transaction that asks for it waits, in every process. Keyed by the name, not the row,
        so it holds before the agent session exists; taken first, with nothing else held."""
        await self.db.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
            {"key": f"workmem:agent_session_name:{external_id}:{self.scope.tenant_id}"},
        )

    async def count(self) -> int:
        """The tenant's agent sessions, whatever the scope's user."""
        statement = select(func.count()).where(AgentSession.tenant_id == self.scope.tenant_id)
        return int((await self.db.execute(statement)).scalar_one())

    async def get(self, agent_session_id: uuid.UUID, *, lock: bool = False) -> AgentSession | None:
        statement = select(AgentSession).where(
            AgentSession.agent_session_id == agent_session_id, *self._visible()
        )
        if lock:
            statement = statement.with_for_update()
        return (await self.db.execute(statement)).scalar_one_or_none()

    async def get_by_external_id(self, external_id: str) -> list[AgentSession]:
        """The visible agent sessions named ``external_id``: at most one for a user-bound
        scope (names are unique per user), at most two read for a tenant-wide one, which sees
        every user's names (one index lookup, whatever the tenant holds)."""
        statement = (
            select(AgentSession)
            .where(AgentSession.external_id == external_id, *self._visible())
            .order_by(AgentSession.created_at)
            .limit(2)
        )
        return list((await self.db.scalars(statement)).all())

    def _with_newest_archive(self) -> Any:
        # The newest archive is the one numbered archive_count: one index lookup per row, in the
        # same statement as the agent session. A fork's is an ancestor's until it has its own
        # (the first lineage segment that reaches it holds it).
        holder = (
            select(AgentSessionLineage.ancestor_session_id)
            .where(
                AgentSessionLineage.tenant_id == AgentSession.tenant_id,
                AgentSessionLineage.agent_session_id == AgentSession.agent_session_id,
                AgentSessionLineage.upto_archive_seq >= AgentSession.archive_count,
            )
            .order_by(AgentSessionLineage.upto_seq, AgentSessionLineage.upto_archive_seq)
            .limit(1)
            .correlate(AgentSession)
            .scalar_subquery()
        )
        return select(AgentSession, *_NEWEST_ARCHIVE_COLUMNS).outerjoin(
            Archive,
            and_(
                Archive.tenant_id == AgentSession.tenant_id,
                Archive.agent_session_id == func.coalesce(holder, AgentSession.agent_session_id),
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

    async def page(
        self,
        *,
        user_id: str | None,
        agent_id: str | None,
        external_id: str | None,
        after: tuple[datetime, uuid.UUID] | None,
        limit: int,
        with_external_id: bool = False,
    ) -> list[tuple[AgentSession, NewestArchive | None]]:
        statement = self._with_newest_archive().where(*self._visible())
        if with_external_id:
            statement = statement.where(AgentSession.external_id.is_not(None))
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
        if result.scalar_one_or_none() is None:
            return False
        # The claim's queue row has no foreign key (docs/scaling.md): it goes by hand.
        await self.db.execute(
            delete(ClaimableArchive).where(
                ClaimableArchive.tenant_id == self.scope.tenant_id,
                ClaimableArchive.agent_session_id == agent_session_id,
            )
        )
        return True

    def commit_change(
        self,
        agent_session_id: uuid.UUID,
        *,
        keep_recent_count: int,
        pending_tokens: int,
        archived_upto_seq: int | None = None,
        archive_count: int | None = None,
        archived_tokens: int | None = None,
    ) -> Update:
        """The counters' update after a commit (skipped, made or imported), unsent: the service
        runs it alone, or a commit sends it as a ``WITH`` of its archive's insert (one round
        trip)."""
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
        return (
            update(AgentSession)
            .where(
                AgentSession.tenant_id == self.scope.tenant_id,
                AgentSession.agent_session_id == agent_session_id,
            )
            .values(**values)
        )

    async def set_memory_policy(
        self, agent_session_id: uuid.UUID, memory_policy: dict[str, Any] | None
    ) -> None:
        await self.db.execute(
            update(AgentSession)
            .where(AgentSession.agent_session_id == agent_session_id, *self._visible())
            .values(memory_policy=memory_policy, updated_at=func.now())
        )

    async def set_record_contexts(self, agent_session_id: uuid.UUID, record: bool) -> None:
        await self.db.execute(
            update(AgentSession)
            .where(AgentSession.agent_session_id == agent_session_id, *self._visible())
            .values(record_contexts=record, updated_at=func.now())
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
