"""Forking an agent session at an archive or a message: choosing the fork point.

A fork at archive ``k`` shares the parent's messages up to the end of ``k`` and its archives up
to ``k``, and starts from working memory version ``k``; a fork at message ``n`` starts from the
newest done archive ending at or before ``n`` and holds the messages after it as live ones. The
agent-session side (``app.sessions.forks``) makes the fork; nothing of the shared history is
copied. Flushes, never commits.
"""

from __future__ import annotations

import uuid

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.repository import ArchiveRepository
from app.errors import Conflict, InvalidInput, NotFound
from app.models import AgentSession, Archive, ArchiveStatus
from app.sessions.forks import ForkPoint, SessionForks
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal


class ForkPointRepository(ArchiveRepository):
    """The two reads a fork point needs, over a history's lineage like every archive read."""

    async def newest_done_by(self, agent_session_id: uuid.UUID, seq: int) -> Archive | None:
        """The newest done archive that ends at or before message ``seq``."""
        for piece in reversed(await self._pieces(agent_session_id)):
            found = await self.db.scalar(
                select(Archive)
                .where(
                    *self._in(piece),
                    Archive.status == ArchiveStatus.DONE,
                    Archive.end_seq <= seq,
                )
                .order_by(Archive.archive_seq.desc())
                .limit(1)
            )
            if found is not None:
                return found
        return None

    async def archived_tokens(self, parent: AgentSession, upto_archive: int) -> int:
        """The message tokens archives ``1..upto_archive`` hold, summed over the archive rows
        on the shorter side of the fork point (the agent session keeps the total of all):
        never over messages, and over half the archives at most."""
        after = parent.archive_count - upto_archive
        if after < upto_archive:
            return parent.archived_tokens - await self._tokens(
                parent.agent_session_id, upto_archive, parent.archive_count
            )
        return await self._tokens(parent.agent_session_id, 0, upto_archive)

    async def _tokens(self, agent_session_id: uuid.UUID, after: int, upto: int) -> int:
        total = 0
        for piece in await self._pieces(agent_session_id, after, upto):
            total += int(
                await self.db.scalar(
                    select(func.coalesce(func.sum(Archive.archived_tokens), 0)).where(
                        *self._in(piece)
                    )
                )
                or 0
            )
        return total


class ForkService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.agent_sessions = AgentSessionService(db, principal)
        self.archives = ForkPointRepository(db, principal.scope)
        self.forks = SessionForks(db, principal)

    async def fork(
        self, agent_session_id: uuid.UUID, *, at_archive: int | None, at_seq: int | None
    ) -> AgentSession:
        # The parent's row lock: no commit, append or deletion of it runs while it is forked.
        parent = await self.agent_sessions.get(agent_session_id, lock=True)
        if at_archive is not None:
            point = await self._at_archive(parent, at_archive)
        elif at_seq is not None:
            point = await self._at_seq(parent, at_seq)
        else:  # the request model requires one
            raise InvalidInput("give exactly one of at_archive and at_seq")
        return await self.forks.create(parent, point)

    async def _at_archive(self, parent: AgentSession, archive_seq: int) -> ForkPoint:
        parent_id = parent.agent_session_id
        archive = (
            await self.archives.get(parent_id, archive_seq)
            if archive_seq <= parent.archive_count
            else None
        )
        if archive is None:
            raise NotFound(f"archive {archive_seq} of agent session {parent_id} not found")
        if archive.status != ArchiveStatus.DONE:
            raise Conflict(
                f"archive {archive_seq} is {archive.status}; a fork starts from a done "
                "archive's working memory (wait for it, or fork at an earlier one or at_seq)"
            )
        return ForkPoint(
            archive_seq=archive_seq,
            archived_upto_seq=archive.end_seq,
            last_seq=archive.end_seq,
            archived_tokens=await self.archives.archived_tokens(parent, archive_seq),
        )

    async def _at_seq(self, parent: AgentSession, seq: int) -> ForkPoint:
        if seq > parent.last_seq:
            message = f"at_seq {seq} is after the agent session's last message ({parent.last_seq})"
            raise InvalidInput(message, errors=[{"loc": ["body", "at_seq"], "msg": message}])
        boundary = await self.archives.newest_done_by(parent.agent_session_id, seq)
        archive_seq = 0 if boundary is None else boundary.archive_seq
        return ForkPoint(
            archive_seq=archive_seq,
            archived_upto_seq=0 if boundary is None else boundary.end_seq,
            last_seq=seq,
            archived_tokens=await self.archives.archived_tokens(parent, archive_seq)
            if archive_seq
            else 0,
        )
