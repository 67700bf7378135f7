"""The commit flow of a request: phase 1, then (when asked) waiting for phase 2.

An edge like the worker: it owns its transactions — phase 1 in one, the answer's read in
another — and waits for the archive between them with no transaction open. Used by the commit
endpoint and by compact; holds no rule of its own (those are in ``service`` and ``jobs``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from app.archives.service import ArchiveService, CommitOutcome
from app.archives.worker import ArchiveWorker
from app.archives.working_memory import WorkingMemory
from app.db import Database
from app.memories.records import ProducedMemory
from app.models import Archive, ArchiveStatus
from app.tenancy.principal import Principal


@dataclass(frozen=True, slots=True)
class CommitResult:
    """Phase 1's outcome and, when an archive was created, that archive as it stands now.

    ``working_memory`` (with its decisions) is set when the archive is ``done`` and it was
    asked for.
    """

    outcome: CommitOutcome
    archive: Archive | None
    working_memory: WorkingMemory | None
    memories: list[ProducedMemory] = field(default_factory=list)
    """The long-term memory changes of the archive, read with its working memory."""


async def commit(
    database: Database,
    worker: ArchiveWorker,
    principal: Principal,
    agent_session_id: uuid.UUID,
    *,
    keep: int | None,
    wait: bool,
    timeout_s: float,
    with_working_memory: bool = True,
) -> CommitResult:
    async with database.tenant(principal.tenant_id) as db:
        outcome = await ArchiveService(db, principal).commit(agent_session_id, keep)
    if outcome.archive is None:
        return CommitResult(outcome, None, None)
    archive_seq = outcome.archive.archive_seq
    if wait:
        # This request processes the archive itself: waking the background worker too would only
        # make the two race for the claim, and the loser's request poll for the winner.
        await worker.drain(principal.tenant_id, agent_session_id, archive_seq, timeout_s=timeout_s)
    else:
        worker.wakeup.set()
    async with database.tenant(principal.tenant_id) as db:
        service = ArchiveService(db, principal)
        archive = await service.get(agent_session_id, archive_seq)
        working_memory = None
        memories: list[ProducedMemory] = []
        if with_working_memory and archive.status == ArchiveStatus.DONE:
            working_memory = await service.working_memory(
                agent_session_id, archive_seq=archive_seq, with_decisions=True, visible=True
            )
            memories = await service.memories_produced(agent_session_id, archive_seq)
    return CommitResult(outcome, archive, working_memory, memories)
