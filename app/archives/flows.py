"""The commit flow of a request: phase 1, then (when asked) waiting for phase 2.

An edge like the worker: it owns its transactions — phase 1 in one, the answer's read in
another — and waits for the archive between them with no transaction open. Used by the commit
endpoint and by compact; holds no rule of its own (those are in ``service`` and ``jobs``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from app import telemetry
from app.archives.retention import TurnRetention
from app.archives.service import ArchiveService, CommitOutcome
from app.archives.worker import ArchiveWorker
from app.archives.working_memory import WorkingMemory
from app.db import Database
from app.idempotency.keys import RequestKey
from app.idempotency.service import Answer, IdempotencyService, answer_of, in_progress
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


Render = Callable[["CommitResult"], tuple[int, bytes]]
"""A commit's answer (status, body) from its result."""


@telemetry.traced(
    "workmem.commit",
    lambda database, worker, principal, agent_session_id, **_: telemetry.ids(
        principal.tenant_id, agent_session_id
    ),
)
async def commit(
    database: Database,
    worker: ArchiveWorker,
    principal: Principal,
    agent_session_id: uuid.UUID,
    *,
    keep: int | TurnRetention | None,
    wait: bool,
    timeout_s: float,
    with_working_memory: bool = True,
) -> CommitResult:
    async with database.tenant(principal.tenant_id) as db:
        outcome = await ArchiveService(db, principal).commit(agent_session_id, keep)
    if outcome.archive is None:
        return CommitResult(outcome, None, None)
    telemetry.annotate(**{telemetry.ARCHIVE_SEQ: outcome.archive.archive_seq})
    if not wait:
        # The answer is the archive as phase 1 inserted it (its RETURNING row), as under an
        # idempotency key: no second transaction to read it back.
        worker.wakeup.set()
        return CommitResult(outcome, outcome.archive, None)
    return await _finished(
        database,
        worker,
        principal,
        outcome,
        outcome.archive,
        wait=wait,
        timeout_s=timeout_s,
        with_working_memory=with_working_memory,
    )


async def _finished(
    database: Database,
    worker: ArchiveWorker,
    principal: Principal,
    outcome: CommitOutcome,
    created: Archive,
    *,
    wait: bool,
    timeout_s: float,
    with_working_memory: bool = True,
) -> CommitResult:
    """Wait (when asked) for the archive phase 1 created, then read it as it stands."""
    agent_session_id = created.agent_session_id
    archive_seq = created.archive_seq
    if wait:
        # This request processes the archive itself: waking the background worker too would only
        # make the two race for the claim, and the loser's request poll for the winner.
        await worker.drain(principal.tenant_id, agent_session_id, archive_seq, timeout_s=timeout_s)
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


async def commit_once(
    database: Database,
    worker: ArchiveWorker,
    principal: Principal,
    agent_session_id: uuid.UUID,
    *,
    keep: int | TurnRetention | None,
    wait: bool,
    timeout_s: float,
    request: RequestKey,
    render: Render,
) -> Answer:
    """``commit`` under an idempotency key: phase 1, the key and the answer phase 1 allows
    (final unless the commit waits) in one transaction; a retry gets the stored answer.

    A waiting commit replaces that answer with the one it gives after the wait, in a short
    transaction of its own: a retry sent meanwhile is answered 202 with the archive as
    accepted, as a wait that timed out would be, and never creates a second archive.
    """
    async with database.tenant(principal.tenant_id) as db:
        keys = IdempotencyService(db, principal.tenant_id)
        stored = await keys.claim(request)
        if stored is not None:
            replay = answer_of(stored, request)
            if replay is None:  # a key claimed by a transaction not yet committed
                raise in_progress()
            return replay
        outcome = await ArchiveService(db, principal).commit(agent_session_id, keep)
        status_code, body = render(CommitResult(outcome, outcome.archive, None))
        first = await keys.answer(request, status_code=status_code, body=body)
    if outcome.archive is None:
        return first
    if not wait:
        worker.wakeup.set()
        return first
    result = await _finished(
        database, worker, principal, outcome, outcome.archive, wait=True, timeout_s=timeout_s
    )
    status_code, body = render(result)
    async with database.tenant(principal.tenant_id) as db:
        return await IdempotencyService(db, principal.tenant_id).answer(
            request, status_code=status_code, body=body
        )
