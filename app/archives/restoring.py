"""Restoring an earlier working memory: version ``k`` becomes current again as a new version.

The history stays append-only: a restore appends a ``done`` archive that covers no new message
(an empty range after the archived ones) whose seven section rows copy version ``k``, each a
decision (``RESTORE``, reason ``restored``) saying from which version, over which one, and by
which key. The next commit updates from it like from any other version. Never rewrites or
removes a stored version; never touches a message.
"""

from __future__ import annotations

import uuid

from sqlalchemy import func
from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.repository import ArchiveRepository
from app.archives.restore_repository import RestoreRepository
from app.archives.working_memory import WorkingMemory
from app.errors import Conflict, NotFound
from app.models import ArchiveStatus
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal
from app.wm.sections import render

RESTORE_GENERATOR = "restore"
"""The generator recorded on a restore's archive and section rows."""


class RestoreService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.principal = principal
        self.agent_sessions = AgentSessionService(db, principal)
        self.archives = ArchiveRepository(db, principal.scope)
        self.restores = RestoreRepository(db, principal.scope)

    async def restore(self, agent_session_id: uuid.UUID, archive_seq: int) -> WorkingMemory:
        """Make the working memory of done archive ``archive_seq`` current again; the new
        current working memory, with its decisions."""
        # The row lock serialises the restore with commits and appends of the agent session.
        agent_session = await self.agent_sessions.get(agent_session_id, lock=True)
        source = await self.archives.get(agent_session_id, archive_seq)
        if source is None:
            raise NotFound(f"archive {archive_seq} of agent session {agent_session_id} not found")
        if source.status != ArchiveStatus.DONE:
            raise Conflict(
                f"archive {archive_seq} is {source.status}; only a done archive has a working "
                "memory to restore"
            )
        restored = await self.archives.working_memory(agent_session_id, archive_seq=archive_seq)
        if restored is None or restored.is_legacy:
            raise Conflict(
                f"archive {archive_seq} has no working-memory sections to restore (it holds "
                "none, or a free-text overview not upgraded yet)"
            )
        if await self.restores.has_unfinished(agent_session_id):
            raise Conflict(
                "an archive of this agent session is still pending or running; restore once it "
                "has finished, so its result cannot land over the restored version"
            )
        current = await self.archives.working_memory(agent_session_id)
        replaced = None
        if current is not None:
            owner = await self.archives.get(agent_session_id, current.archive_seq)
            replaced = None if owner is None else (owner.agent_session_id, current.archive_seq)
        new_seq = agent_session.archive_count + 1
        archived = agent_session.archived_upto_seq
        last_seq = agent_session.last_seq
        live = last_seq - archived
        await self.archives.insert(
            {
                "agent_session_id": agent_session_id,
                "archive_seq": new_seq,
                # No message is archived: the range is empty, right after the archived ones.
                "start_seq": archived + 1,
                "end_seq": archived,
                "status": ArchiveStatus.DONE,
                "keep_recent_count": agent_session.keep_recent_count,
                "tail_start_seq": archived + 1 if live else None,
                "tail_end_seq": last_seq if live else None,
                "tail_message_count": live,
                "tail_tokens": agent_session.total_tokens - agent_session.archived_tokens,
                "archived_tokens": 0,
                "generator": RESTORE_GENERATOR,
                "generator_note": f"working memory of archive {archive_seq} restored by key "
                f"{self.principal.api_key_id}",
                "overview": render(restored.sections),
                "abstract": f"Working memory of archive {archive_seq} restored.",
                "wm_tokens": restored.tokens,
                "finished_at": func.now(),
            }
        )
        await self.restores.copy_sections(
            source_session=source.agent_session_id,
            source_seq=archive_seq,
            target_session=agent_session_id,
            target_seq=new_seq,
            replaced=replaced,
            key_id=self.principal.api_key_id,
            generator=RESTORE_GENERATOR,
        )
        await self.agent_sessions.record_counters(
            self.agent_sessions.commit_counters(
                agent_session,
                keep=agent_session.keep_recent_count,
                end_seq=archived,
                archived_tokens=0,
                pending_tokens=agent_session.pending_tokens,
            )
        )
        current_now = await self.archives.working_memory(agent_session_id, with_decisions=True)
        if current_now is None or current_now.archive_seq != new_seq:
            raise RuntimeError(f"the restored working memory {new_seq} is not current")
        return current_now
