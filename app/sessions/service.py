"""Agent-session and message logic: create, read, delete, and append with gap-free ``seq``.

An append is prepared here (validated, each message's tokens counted once) and stored by one
statement that locks the agent-session row, numbers the messages and keeps ``pending_tokens``
current in O(1) per message (DESIGN 5). Flushes, never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from sqlalchemy import Update
from sqlalchemy.ext.asyncio import AsyncSession

from app.cursors import decode_cursor, encode_cursor
from app.errors import Conflict, Forbidden, NotFound, QuotaExceeded
from app.memories.policy import MemoryPolicy
from app.memories.service import MemoryService
from app.metrics import LIMITED
from app.models import AgentSession
from app.sessions.forks import SessionForks
from app.sessions.message_repository import MessageRepository

# What an append is prepared with, named here too: callers of the service import it from here.
from app.sessions.prepare import OFF_LOOP_CHARACTERS as OFF_LOOP_CHARACTERS
from app.sessions.prepare import Limits as Limits
from app.sessions.prepare import PreparedAppend as PreparedAppend
from app.sessions.prepare import check_metadata_size
from app.sessions.prepare import prepare_append as prepare_append
from app.sessions.prepare import prepare_append_off_loop as prepare_append_off_loop
from app.sessions.records import NewestArchive, StoredMessage, ToolResult
from app.sessions.repository import (
    QUOTA_RETRY_AFTER_S,
    AgentSessionRepository,
    appended_rows,
    start_append,
)
from app.sessions.schemas import AgentSessionCreate
from app.sessions.tool_results import names_of_calls, tool_result_of
from app.tenancy.principal import Principal, Scope


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    messages: list[StoredMessage]
    pending_tokens: int
    live_message_count: int
    archived_upto_seq: int


@dataclass(frozen=True, slots=True)
class PendingDrift:
    agent_session_id: uuid.UUID
    stored: int
    recomputed: int


def _utc(moment: datetime) -> datetime:
    """A client's ``created_at`` as stored: naive means UTC; answered in UTC like every read."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


async def start_prepared(
    connection: psycopg.AsyncConnection[Any],
    scope: Scope,
    agent_session_id: uuid.UUID,
    prepared: PreparedAppend,
) -> psycopg.AsyncCursor[Any]:
    """Send the one statement that stores prepared messages: it locks the agent session
    (appends and commits of one agent session serialise there, so ``seq`` stays gap-free),
    numbers them, keeps ``pending_tokens`` by the rule of ``pending.py`` and saves the
    counters. ``finish_prepared`` reads what it did."""
    return await start_append(
        connection,
        scope,
        agent_session_id,
        roles=[message.stored_role for message in prepared.messages],
        messages=prepared.stored,
        token_counts=prepared.token_counts,
        texts=prepared.texts,
        metadata=[message.metadata for message in prepared.messages],
        created_at=[
            None if message.created_at is None else _utc(message.created_at)
            for message in prepared.messages
        ],
        quota_bytes=prepared.quota_bytes,
    )


async def finish_prepared(
    cursor: psycopg.AsyncCursor[Any], agent_session_id: uuid.UUID, prepared: PreparedAppend
) -> AppendOutcome:
    rows = await appended_rows(cursor)
    if not rows:
        raise NotFound(f"agent session {agent_session_id} not found")
    stored = [
        StoredMessage(
            seq=row.seq,
            role=message.stored_role,
            turn=row.turn,
            message=as_stored,
            token_count=tokens,
            metadata=message.metadata,
            created_at=row.created_at,
        )
        for row, message, as_stored, tokens in zip(
            rows, prepared.messages, prepared.stored, prepared.token_counts, strict=True
        )
    ]
    last = rows[-1]
    return AppendOutcome(
        messages=stored,
        pending_tokens=last.pending_tokens,
        live_message_count=last.last_seq - last.archived_upto_seq,
        archived_upto_seq=last.archived_upto_seq,
    )


async def append_prepared(
    connection: psycopg.AsyncConnection[Any],
    scope: Scope,
    agent_session_id: uuid.UUID,
    prepared: PreparedAppend,
) -> AppendOutcome:
    """Store prepared messages: one statement, one round trip."""
    cursor = await start_prepared(connection, scope, agent_session_id, prepared)
    return await finish_prepared(cursor, agent_session_id, prepared)


class AgentSessionService:
    def __init__(
        self, db: AsyncSession, principal: Principal, limits: Limits | None = None
    ) -> None:
        self.db = db
        self.principal = principal
        self.limits = limits or Limits()
        self.agent_sessions = AgentSessionRepository(db, principal.scope)
        self.messages = MessageRepository(db, principal.scope)

    async def create(
        self, body: AgentSessionCreate, *, created_at: datetime | None = None
    ) -> AgentSession:
        """A new agent session; ``created_at`` keeps the time it began in another store."""
        check_metadata_size(body.metadata, self.limits, what="the agent session")
        user_id = body.user_id
        if self.principal.user_id is not None:
            if user_id is not None and user_id != self.principal.user_id:
                raise Forbidden("this API key is bound to another user_id")
            user_id = self.principal.user_id
        keep = body.keep_recent_count
        policy = body.memory_policy
        await self._check_session_quota()
        row = await self.agent_sessions.insert(
            external_id=body.external_id,
            user_id=user_id,
            agent_id=body.agent_id,
            metadata=body.metadata,
            keep_recent_count=self.limits.default_keep_recent_count if keep is None else keep,
            created_at=None if created_at is None else _utc(created_at),
            memory_policy=None if policy is None else policy.policy().to_json(),
            record_contexts=body.record_contexts,
        )
        if row is None:
            raise Conflict(f"an agent session with external_id {body.external_id!r} exists")
        return row

    async def _check_session_quota(self) -> None:
        """429 when the tenant holds its quota of agent sessions. Counted under the tenant's
        quota lock, which the transaction keeps until it commits the new row: concurrent
        creates, in any process, are counted one after the other."""
        quota = self.limits.quota_agent_sessions
        if not quota:
            return
        await self.agent_sessions.lock_quota()
        held = await self.agent_sessions.count()
        if held >= quota:
            LIMITED.labels("agent_sessions").inc()
            raise QuotaExceeded(
                f"this tenant has {held} agent sessions; its quota is {quota}",
                retry_after_s=QUOTA_RETRY_AFTER_S,
            )

    async def get(self, agent_session_id: uuid.UUID, *, lock: bool = False) -> AgentSession:
        row = await self.agent_sessions.get(agent_session_id, lock=lock)
        if row is None:
            raise NotFound(f"agent session {agent_session_id} not found")
        return row

    async def set_memory_policy(
        self, agent_session_id: uuid.UUID, policy: MemoryPolicy | None
    ) -> AgentSession:
        """Replace the agent session's own memory policy (``None`` removes it); its next archive
        obeys it."""
        await self.get(agent_session_id, lock=True)
        stored = None if policy is None else policy.to_json()
        await self.agent_sessions.set_memory_policy(agent_session_id, stored)
        self.db.expire_all()
        return await self.get(agent_session_id)

    async def set_record_contexts(self, agent_session_id: uuid.UUID, record: bool) -> None:
        """Record every context of the agent session by default (or only when asked)."""
        await self.get(agent_session_id, lock=True)
        await self.agent_sessions.set_record_contexts(agent_session_id, record)
        self.db.expire_all()

    async def find_by_external_id(self, external_id: str) -> AgentSession | None:
        """The agent session a client named ``external_id``, if one is visible.

        Names are unique per user, so a tenant-wide key can see one name used by several
        users: it must then say which (409), as it may know of all of them.
        """
        found = await self.agent_sessions.get_by_external_id(external_id)
        if len(found) > 1:
            raise Conflict(
                f"several users have an agent session named {external_id!r}; use its id, "
                "or a key bound to the user"
            )
        return found[0] if found else None

    async def get_by_external_id(self, external_id: str) -> AgentSession:
        """The agent session a client named ``external_id``; 404 when none is visible."""
        row = await self.find_by_external_id(external_id)
        if row is None:
            raise NotFound(f"no agent session has external_id {external_id!r}")
        return row

    async def get_or_create(self, external_id: str, *, keep_recent_count: int) -> AgentSession:
        """The agent session a client named ``external_id``, created when there is none.

        Two first appends racing for one new name both end with the same row: the loser's insert
        finds the name taken and reads the winner's. Names are unique per user, so another
        user's agent session of the same name is never found, nor in the way.
        """
        found = await self.find_by_external_id(external_id)
        if found is not None:
            return found
        body = AgentSessionCreate(external_id=external_id, keep_recent_count=keep_recent_count)
        try:
            return await self.create(body)
        except Conflict:
            found = await self.find_by_external_id(external_id)
            if found is None:
                raise
            return found

    async def lock_name(self, external_id: str) -> None:
        """Serialise, until the transaction ends, everything done under the name
        ``external_id`` (of any user of the tenant) by the transactions that take this lock."""
        await self.agent_sessions.lock_name(external_id)

    async def tool_call_ids(self, agent_session_id: uuid.UUID) -> set[str]:
        """The tool-call ids already used in the agent session: new calls must not repeat one."""
        return await self.messages.tool_call_ids(agent_session_id)

    async def get_with_newest_archive(
        self, agent_session_id: uuid.UUID
    ) -> tuple[AgentSession, NewestArchive | None]:
        """The agent session and its newest archive's range and status, in one statement."""
        found = await self.agent_sessions.get_with_newest_archive(agent_session_id)
        if found is None:
            raise NotFound(f"agent session {agent_session_id} not found")
        return found

    async def page(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        external_id: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
        with_external_id: bool = False,
    ) -> tuple[list[tuple[AgentSession, NewestArchive | None]], str | None]:
        """A page of agent sessions, oldest first; ``with_external_id``: only those a client
        named."""
        rows = await self.agent_sessions.page(
            user_id=user_id,
            agent_id=agent_id,
            external_id=external_id,
            after=decode_cursor(cursor) if cursor else None,
            limit=limit + 1,
            with_external_id=with_external_id,
        )
        if len(rows) <= limit:
            return rows, None
        last, _ = rows[limit - 1]
        return rows[:limit], encode_cursor(last.created_at, last.agent_session_id)

    async def delete(self, agent_session_id: uuid.UUID) -> None:
        """Delete the agent session and everything derived from it; its long-term memories are
        erased first (rows removed, events left with ids only), in the same transaction."""
        await self.get(agent_session_id, lock=True)
        if await SessionForks(self.db, self.principal).has_forks(agent_session_id):
            raise Conflict(
                f"agent session {agent_session_id} has forks that share its history; delete "
                "them first (their lineage names them)"
            )
        await MemoryService(self.db, self.principal).erase_agent_session(agent_session_id)
        if not await self.agent_sessions.delete(agent_session_id):
            raise NotFound(f"agent session {agent_session_id} not found")

    async def record_skipped_commit(
        self, agent_session: AgentSession, keep: int, *, pending_tokens: int = 0
    ) -> None:
        """A skipped commit still remembers ``keep`` and sets the counter (DESIGN 6.1): to 0,
        or to what lies outside the keep window when a tool group made the split impossible."""
        await self.record_counters(
            self.agent_sessions.commit_change(
                agent_session.agent_session_id,
                keep_recent_count=keep,
                pending_tokens=pending_tokens,
            )
        )

    async def record_counters(self, change: Update) -> None:
        """Run a counters' update built by ``commit_counters`` (or the repository's
        ``commit_change``) on its own."""
        await self.db.execute(change)

    def commit_counters(
        self,
        agent_session: AgentSession,
        *,
        keep: int,
        end_seq: int,
        archived_tokens: int,
        pending_tokens: int,
    ) -> Update:
        """The counters after a commit made ``end_seq`` the archived end, unsent: a commit sends
        it with its archive's insert (one statement), a restore with ``record_counters``."""
        return self.agent_sessions.commit_change(
            agent_session.agent_session_id,
            keep_recent_count=keep,
            pending_tokens=pending_tokens,
            archived_upto_seq=end_seq,
            archive_count=agent_session.archive_count + 1,
            archived_tokens=agent_session.archived_tokens + archived_tokens,
        )

    async def record_imported_archives(
        self,
        agent_session_id: uuid.UUID,
        *,
        keep: int,
        archived_upto_seq: int,
        archive_count: int,
        archived_tokens: int,
    ) -> None:
        """The counters of an agent session whose archives came from another store, as if its
        commits had run here (the archive rows are ``ArchiveService.store_imported``'s)."""
        await self.record_counters(
            self.agent_sessions.commit_change(
                agent_session_id,
                keep_recent_count=keep,
                pending_tokens=0,
                archived_upto_seq=archived_upto_seq,
                archive_count=archive_count,
                archived_tokens=archived_tokens,
            )
        )

    async def read_messages(
        self, agent_session_id: uuid.UUID, *, after_seq: int, limit: int
    ) -> tuple[AgentSession, list[StoredMessage]]:
        """The agent session and its messages after ``after_seq``, archived ones included."""
        agent_session = await self.get(agent_session_id)
        rows = await self.messages.read(agent_session_id, after_seq=after_seq, limit=limit)
        return agent_session, rows

    async def messages_between(
        self,
        agent_session_id: uuid.UUID,
        *,
        after_seq: int,
        upto_seq: int,
        limit: int,
        without_retracted: bool = False,
    ) -> list[StoredMessage]:
        """Messages ``after_seq < seq <= upto_seq``, oldest first (``without_retracted``: the
        ones the agent retracted left out, as a context sends them).

        For callers that already hold a row only a visible agent session has (the agent session
        itself, or one of its archives): the agent session is not looked up again.
        """
        return await self.messages.read(
            agent_session_id,
            after_seq=after_seq,
            limit=limit,
            upto_seq=upto_seq,
            without_retracted=without_retracted,
        )

    async def messages_at(
        self, agent_session_id: uuid.UUID, seqs: Sequence[int]
    ) -> list[StoredMessage]:
        """The messages with these seqs, oldest first (the sources of working-memory items), for
        callers that hold a row only a visible agent session has, as ``messages_between``."""
        return await self.messages.read_seqs(agent_session_id, seqs) if seqs else []

    async def tool_results(self, agent_session_id: uuid.UUID) -> list[ToolResult]:
        """The agent session's tool results, oldest first, for callers that hold a row only a
        visible agent session has, as ``messages_between``."""
        rows = await self.messages.tool_results(agent_session_id)
        names = names_of_calls(await self.messages.tool_calls(agent_session_id)) if rows else {}
        return [tool_result_of(row, names) for row in rows]

    async def tool_result(self, agent_session_id: uuid.UUID, tool_call_id: str) -> ToolResult:
        """The tool result that answers ``tool_call_id`` (``NotFound`` when none does), for
        callers that hold a visible agent session's id, as ``tool_results``."""
        rows = await self.messages.tool_results(agent_session_id, tool_call_id=tool_call_id)
        if not rows:
            raise NotFound(f"no tool result answers the call {tool_call_id!r}")
        names = names_of_calls(await self.messages.tool_calls(agent_session_id))
        return tool_result_of(rows[0], names)

    async def holder_of(self, agent_session_id: uuid.UUID, seq: int) -> uuid.UUID:
        """The agent session whose row is message ``seq`` of this one's history (a fork's
        shared messages are its ancestors')."""
        return (await self.messages.lineage.of(agent_session_id)).holder_of_seq(seq)

    async def recompute_pending(self, agent_session: AgentSession) -> int:
        """``pending_tokens`` from the rows: live messages outside the keep window."""
        keep = agent_session.keep_recent_count
        return await self.messages.sum_tokens(
            agent_session.agent_session_id,
            after_seq=agent_session.archived_upto_seq,
            upto_seq=agent_session.last_seq - keep,
        )

    async def check_pending(self, agent_session_id: uuid.UUID, *, repair: bool) -> PendingDrift:
        agent_session = await self.get(agent_session_id, lock=repair)
        recomputed = await self.recompute_pending(agent_session)
        if repair and recomputed != agent_session.pending_tokens:
            await self.agent_sessions.set_pending_tokens(agent_session_id, recomputed)
        return PendingDrift(agent_session_id, agent_session.pending_tokens, recomputed)
