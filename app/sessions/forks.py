"""Making a fork on the agent-session side, once its fork point is chosen (``app.archives.
forking`` chooses it): the new agent session's row and counters, its lineage, and the copy of
the messages that are live in it. Flushes, never commits.

What the fork shares (archived messages, archives, section versions) is never copied: the cost
is one row, one lineage row per ancestor and the live messages after the fork's working memory
(none for a fork at an archive), whatever the length of the history before.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.models import AgentSession
from app.sessions.fork_repository import ForkRepository
from app.sessions.lineage_repository import LineageReader
from app.sessions.message_repository import MessageRepository
from app.tenancy.principal import Principal


@dataclass(frozen=True, slots=True)
class ForkPoint:
    """Where a fork leaves its parent: archives ``1..archive_seq`` and messages
    ``1..archived_upto_seq`` shared (archived), messages up to ``last_seq`` copied (live), and
    the message tokens the shared archives hold."""

    archive_seq: int
    archived_upto_seq: int
    last_seq: int
    archived_tokens: int


class SessionForks:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.scope = principal.scope
        self.forks = ForkRepository(db, principal.scope)
        self.lineage = LineageReader(db, principal.scope)
        self.messages = MessageRepository(db, principal.scope)

    async def create(self, parent: AgentSession, point: ForkPoint) -> AgentSession:
        """The new agent session, forked from ``parent`` (locked by the caller) at ``point``."""
        parent_lineage = await self.lineage.of(parent.agent_session_id)
        last = (
            await self.messages.read(parent.agent_session_id, after_seq=point.last_seq - 1, limit=1)
            if point.last_seq
            else []
        )
        fork = await self.forks.insert(
            {
                "user_id": parent.user_id,
                "agent_id": parent.agent_id,
                "metadata_": parent.metadata_,
                "memory_policy": parent.memory_policy,
                "record_contexts": parent.record_contexts,
                "keep_recent_count": parent.keep_recent_count,
                "last_seq": point.last_seq,
                "archived_upto_seq": point.archived_upto_seq,
                "turn_count": last[0].turn if last else 0,
                "archive_count": point.archive_seq,
                "archived_tokens": point.archived_tokens,
                "total_tokens": point.archived_tokens,
                "parent_session_id": parent.agent_session_id,
                "forked_at_archive_seq": point.archive_seq,
                "forked_at_seq": point.last_seq,
            }
        )
        ancestors = parent_lineage.fork_at(point.archived_upto_seq, point.archive_seq)
        await self.lineage.record(fork.agent_session_id, ancestors)
        live_tokens = stored_bytes = 0
        for piece in parent_lineage.seq_pieces(point.archived_upto_seq, point.last_seq):
            tokens, size = await self.forks.copy_messages(fork.agent_session_id, piece)
            live_tokens += tokens
            stored_bytes += size
        return await self.forks.set_counters(
            fork.agent_session_id,
            total_tokens=point.archived_tokens + live_tokens,
            stored_bytes=stored_bytes,
            pending_tokens=await self._pending(fork),
        )

    async def _pending(self, fork: AgentSession) -> int:
        """The live messages outside the keep window (DESIGN 5), as the maintenance check
        recomputes it."""
        return await self.messages.sum_tokens(
            fork.agent_session_id,
            after_seq=fork.archived_upto_seq,
            upto_seq=fork.last_seq - fork.keep_recent_count,
        )

    async def has_forks(self, agent_session_id: uuid.UUID) -> bool:
        return await self.forks.has_forks(agent_session_id)
