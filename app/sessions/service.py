"""Agent-session and message logic: create, read, delete, and append with gap-free ``seq``.

Appends lock the agent-session row, number the messages, count each message's tokens once, and
keep ``pending_tokens`` current in O(1) per message (DESIGN 5). Flushes, never commits.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.cursors import decode_cursor, encode_cursor
from app.errors import Conflict, Forbidden, InvalidInput, NotFound, PayloadTooLarge
from app.memories.service import MemoryService
from app.models import AgentSession
from app.sessions.pending import advance_pending, leaving_seqs
from app.sessions.records import NewestArchive, StoredMessage
from app.sessions.repository import AgentSessionRepository, MessageRepository
from app.sessions.schemas import AgentSessionCreate, MessageCreate
from app.tenancy.principal import Principal
from app.validation import find_unstorable
from app.wm.tokens import message_text, message_tokens


@dataclass(frozen=True, slots=True)
class Limits:
    max_message_bytes: int = 1024 * 1024
    max_batch_messages: int = 500
    default_keep_recent_count: int = 10


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


class AgentSessionService:
    def __init__(
        self, db: AsyncSession, principal: Principal, limits: Limits | None = None
    ) -> None:
        self.db = db
        self.principal = principal
        self.limits = limits or Limits()
        self.agent_sessions = AgentSessionRepository(db, principal.scope)
        self.messages = MessageRepository(db, principal.scope)

    async def create(self, body: AgentSessionCreate) -> AgentSession:
        user_id = body.user_id
        if self.principal.user_id is not None:
            if user_id is not None and user_id != self.principal.user_id:
                raise Forbidden("this API key is bound to another user_id")
            user_id = self.principal.user_id
        keep = body.keep_recent_count
        row = await self.agent_sessions.insert(
            external_id=body.external_id,
            user_id=user_id,
            agent_id=body.agent_id,
            metadata=body.metadata,
            keep_recent_count=self.limits.default_keep_recent_count if keep is None else keep,
        )
        if row is None:
            raise Conflict(f"an agent session with external_id {body.external_id!r} exists")
        return row

    async def get(self, agent_session_id: uuid.UUID, *, lock: bool = False) -> AgentSession:
        row = await self.agent_sessions.get(agent_session_id, lock=lock)
        if row is None:
            raise NotFound(f"agent session {agent_session_id} not found")
        return row

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
    ) -> tuple[list[tuple[AgentSession, NewestArchive | None]], str | None]:
        rows = await self.agent_sessions.page(
            user_id=user_id,
            agent_id=agent_id,
            external_id=external_id,
            after=decode_cursor(cursor) if cursor else None,
            limit=limit + 1,
        )
        if len(rows) <= limit:
            return rows, None
        last, _ = rows[limit - 1]
        return rows[:limit], encode_cursor(last.created_at, last.agent_session_id)

    async def delete(self, agent_session_id: uuid.UUID) -> None:
        """Delete the agent session and everything derived from it; its long-term memories are
        erased first (rows removed, events left with ids only), in the same transaction."""
        await self.get(agent_session_id, lock=True)
        await MemoryService(self.db, self.principal).erase_agent_session(agent_session_id)
        if not await self.agent_sessions.delete(agent_session_id):
            raise NotFound(f"agent session {agent_session_id} not found")

    def _prepare(self, messages: Sequence[MessageCreate]) -> list[dict[str, Any]]:
        """Each message as it will be stored; all are checked before any is stored."""
        if len(messages) > self.limits.max_batch_messages:
            raise PayloadTooLarge(
                f"at most {self.limits.max_batch_messages} messages per batch, got {len(messages)}"
            )
        prepared = []
        for index, message in enumerate(messages):
            stored = message.openai_message()
            bad_at = find_unstorable({"message": stored, "metadata": message.metadata})
            if bad_at is not None:
                raise InvalidInput(
                    "NUL characters and unpaired surrogates cannot be stored",
                    errors=[
                        {
                            "loc": ["body", index, *bad_at],
                            "msg": "contains a NUL character or an unpaired surrogate",
                            "type": "unstorable_text",
                        }
                    ],
                )
            size = len(json.dumps(stored, ensure_ascii=False).encode())
            if size > self.limits.max_message_bytes:
                raise PayloadTooLarge(
                    f"message {index} is {size} bytes; the limit is "
                    f"{self.limits.max_message_bytes} bytes per message"
                )
            prepared.append(stored)
        return prepared

    async def append(
        self, agent_session_id: uuid.UUID, messages: Sequence[MessageCreate]
    ) -> AppendOutcome:
        """Append messages atomically; all are validated before any is stored."""
        prepared = self._prepare(messages)
        # The row lock serialises appends (and commits) of one agent session: seq stays gap-free.
        state = await self.agent_sessions.lock_for_append(agent_session_id)
        if state is None:
            raise NotFound(f"agent session {agent_session_id} not found")
        last_seq = state.last_seq
        turn = state.turn_count
        rows: list[StoredMessage] = []
        for offset, (message, stored) in enumerate(zip(messages, prepared, strict=True), start=1):
            if message.role == "user":
                turn += 1
            rows.append(
                StoredMessage(
                    seq=last_seq + offset,
                    role=message.role,
                    turn=turn,
                    message=stored,
                    token_count=message_tokens(stored),
                    metadata=message.metadata,
                    created_at=state.now
                    if message.created_at is None
                    else _utc(message.created_at),
                )
            )
        keep = state.keep_recent_count
        archived = state.archived_upto_seq
        leaving = leaving_seqs(
            last_seq=last_seq, archived_upto_seq=archived, keep=keep, count=len(rows)
        )
        stored_tokens: dict[int, int] = {}
        needed = [seq for seq in leaving if seq <= last_seq]
        first_leaving = last_seq + 1 - keep
        if needed and needed[0] == first_leaving and state.first_leaving_tokens is not None:
            stored_tokens[first_leaving] = state.first_leaving_tokens
        missing = [seq for seq in needed if seq not in stored_tokens]
        stored_tokens.update(await self.messages.token_counts(agent_session_id, missing))
        new_tokens = [row.token_count for row in rows]
        pending = advance_pending(
            pending_tokens=state.pending_tokens,
            last_seq=last_seq,
            keep=keep,
            leaving=leaving,
            new_tokens=new_tokens,
            stored_tokens=stored_tokens,
        )
        await self.messages.insert_many(
            agent_session_id, rows, [message_text(stored) for stored in prepared]
        )
        new_last_seq = last_seq + len(rows)
        await self.agent_sessions.save_counters(
            agent_session_id,
            last_seq=new_last_seq,
            turn_count=turn,
            pending_tokens=pending,
            total_tokens=state.total_tokens + sum(new_tokens),
        )
        return AppendOutcome(
            messages=rows,
            pending_tokens=pending,
            live_message_count=new_last_seq - archived,
            archived_upto_seq=archived,
        )

    async def record_skipped_commit(
        self, agent_session: AgentSession, keep: int, *, pending_tokens: int = 0
    ) -> None:
        """A skipped commit still remembers ``keep`` and sets the counter (DESIGN 6.1): to 0,
        or to what lies outside the keep window when a tool group made the split impossible."""
        await self.agent_sessions.save_commit(
            agent_session.agent_session_id, keep_recent_count=keep, pending_tokens=pending_tokens
        )

    async def record_commit(
        self,
        agent_session: AgentSession,
        *,
        keep: int,
        end_seq: int,
        archived_tokens: int,
        pending_tokens: int,
    ) -> None:
        await self.agent_sessions.save_commit(
            agent_session.agent_session_id,
            keep_recent_count=keep,
            pending_tokens=pending_tokens,
            archived_upto_seq=end_seq,
            archive_count=agent_session.archive_count + 1,
            archived_tokens=agent_session.archived_tokens + archived_tokens,
        )

    async def read_messages(
        self, agent_session_id: uuid.UUID, *, after_seq: int, limit: int
    ) -> tuple[AgentSession, list[StoredMessage]]:
        """The agent session and its messages after ``after_seq``, archived ones included."""
        agent_session = await self.get(agent_session_id)
        rows = await self.messages.read(agent_session_id, after_seq=after_seq, limit=limit)
        return agent_session, rows

    async def messages_between(
        self, agent_session_id: uuid.UUID, *, after_seq: int, upto_seq: int, limit: int
    ) -> list[StoredMessage]:
        """Messages ``after_seq < seq <= upto_seq``, oldest first.

        For callers that already hold a row only a visible agent session has (the agent session
        itself, or one of its archives): the agent session is not looked up again.
        """
        return await self.messages.read(
            agent_session_id, after_seq=after_seq, limit=limit, upto_seq=upto_seq
        )

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
