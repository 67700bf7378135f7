"""HTTP routes for commits, archives and working memory (``/v1/sessions/{id}/…``).

Owns the parameters and the transactions of a request, and maps what services return to the
``…Read`` bodies; never decides anything itself.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Query, Response, status

from app.archives import flows
from app.archives.dependencies import WorkerDep
from app.archives.forking import ForkService
from app.archives.presenter import archive_expanded, archive_read
from app.archives.restoring import RestoreService
from app.archives.schemas import (
    ArchiveActionCreate,
    ArchiveExpanded,
    ArchivePage,
    ArchiveRead,
    CommitCreate,
    CommitRead,
    ForkCreate,
    RestoreCreate,
    WorkingMemoryRead,
)
from app.archives.service import ArchiveService
from app.archives.working_memory import WorkingMemory
from app.deps import DatabaseDep, SettingsDep
from app.idempotency.dependencies import RequestKeyDep
from app.idempotency.responses import JSON, answered
from app.sessions.presenter import agent_session_read
from app.sessions.schemas import AgentSessionRead
from app.tenancy.auth import Reader, Writer
from app.validation import SEQ_MAX
from app.web.problems import TENANT_ROUTE, WITH_BODY, problems
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/v1/sessions",
    tags=["archives"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE),
)

INT32_MAX = 2**31 - 1

ArchiveSeq = Annotated[int, Path(ge=1, le=INT32_MAX)]


@router.post(
    "/{agent_session_id}/commit",
    response_model=CommitRead,
    responses={
        202: {"model": CommitRead, "description": "accepted, or still running"},
        **problems(404, 409, *WITH_BODY),
    },
)
async def commit(
    agent_session_id: uuid.UUID,
    principal: Writer,
    database: DatabaseDep,
    settings: SettingsDep,
    worker: WorkerDep,
    request_key: RequestKeyDep,
    body: CommitCreate | None = None,
) -> Response:
    body = body or CommitCreate()
    wait = body.wait

    def render(result: flows.CommitResult) -> tuple[int, bytes]:
        read, code = commit_read(result, wait=wait)
        return code, read.model_dump_json().encode()

    timeout_s = body.wait_timeout_s or settings.commit_wait_timeout_s
    if request_key is not None:
        return answered(
            await flows.commit_once(
                database,
                worker,
                principal,
                agent_session_id,
                keep=body.turn_retention() or body.keep_recent_count,
                wait=wait,
                timeout_s=timeout_s,
                request=request_key,
                render=render,
            )
        )
    result = await flows.commit(
        database,
        worker,
        principal,
        agent_session_id,
        keep=body.turn_retention() or body.keep_recent_count,
        wait=wait,
        timeout_s=timeout_s,
    )
    code, data = render(result)
    return Response(data, status_code=code, media_type=JSON)


def commit_read(result: flows.CommitResult, *, wait: bool) -> tuple[CommitRead, int]:
    """A commit's answer and its status: 200 skipped or finished, 202 accepted or running."""
    outcome, archive = result.outcome, result.archive
    if archive is None:
        skipped = CommitRead(
            status="skipped",
            reason=outcome.skipped,
            archive=None,
            working_memory=None,
            pending_tokens=outcome.pending_tokens,
            live_message_count=outcome.live_message_count,
        )
        return skipped, status.HTTP_200_OK
    finished = archive.status.is_finished
    read = CommitRead(
        status=(archive.status.value if finished else "running") if wait else "accepted",
        archive=archive_read(archive),
        working_memory=None
        if result.working_memory is None
        else WorkingMemoryRead.from_value(result.working_memory, result.memories),
        pending_tokens=outcome.pending_tokens,
        live_message_count=outcome.live_message_count,
    )
    code = status.HTTP_200_OK if wait and finished else status.HTTP_202_ACCEPTED
    return read, code


@router.get("/{agent_session_id}/archives", responses=problems(404, 422))
async def list_archives(
    agent_session_id: uuid.UUID,
    principal: Reader,
    database: DatabaseDep,
    before_seq: Annotated[int | None, Query(ge=1, le=INT32_MAX)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> ArchivePage:
    async with database.tenant(principal.tenant_id) as db:
        rows, next_before = await ArchiveService(db, principal).page(
            agent_session_id, before_seq=before_seq, limit=limit
        )
    return ArchivePage(items=[archive_read(row) for row in rows], next_before_seq=next_before)


@router.get("/{agent_session_id}/archives/{archive_seq:int}", responses=problems(404, 422))
async def expand_archive(
    agent_session_id: uuid.UUID,
    archive_seq: ArchiveSeq,
    principal: Reader,
    database: DatabaseDep,
    after_seq: Annotated[
        int | None, Query(ge=0, le=SEQ_MAX, description="page the raw messages")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 500,
) -> ArchiveExpanded:
    async with database.tenant(principal.tenant_id) as db:
        expanded = await ArchiveService(db, principal).expand(
            agent_session_id, archive_seq, after_seq=after_seq or 0, limit=limit, with_actions=True
        )
    return archive_expanded(expanded)


@router.post(
    "/{agent_session_id}/archives/{archive_seq:int}:retry",
    responses=problems(404, 409, *WITH_BODY),
)
async def retry_archive(
    agent_session_id: uuid.UUID,
    archive_seq: ArchiveSeq,
    principal: Writer,
    database: DatabaseDep,
    worker: WorkerDep,
    body: ArchiveActionCreate | None = None,
) -> ArchiveRead:
    """Queue a failed archive again (409 for any other); the retry is recorded in the
    archive's ``actions`` with the key and the reason given."""
    reason = None if body is None else body.reason
    async with database.tenant(principal.tenant_id) as db:
        archive = await ArchiveService(db, principal).retry(agent_session_id, archive_seq, reason)
    worker.wakeup.set()
    return archive_read(archive)


@router.post(
    "/{agent_session_id}/archives/{archive_seq:int}:clear",
    responses=problems(404, 409, *WITH_BODY),
)
async def clear_archive(
    agent_session_id: uuid.UUID,
    archive_seq: ArchiveSeq,
    principal: Writer,
    database: DatabaseDep,
    body: ArchiveActionCreate | None = None,
) -> ArchiveRead:
    """Set a failed archive aside for good (409 for any other): it never runs again and the
    next archive covers its messages; the clear is recorded in the archive's ``actions``."""
    reason = None if body is None else body.reason
    async with database.tenant(principal.tenant_id) as db:
        archive = await ArchiveService(db, principal).clear(agent_session_id, archive_seq, reason)
    return archive_read(archive)


@router.get("/{agent_session_id}/working-memory", responses=problems(404, 422))
async def working_memory(
    agent_session_id: uuid.UUID, principal: Reader, database: DatabaseDep
) -> WorkingMemoryRead:
    async with database.tenant(principal.tenant_id) as db:
        service = ArchiveService(db, principal)
        current = await service.working_memory(agent_session_id, with_decisions=True)
        produced = (
            []
            if current is None
            else await service.memories_produced(agent_session_id, current.archive_seq)
        )
    return WorkingMemoryRead.from_value(current or WorkingMemory.empty(), produced)


@router.post(
    "/{agent_session_id}/working-memory:restore",
    status_code=status.HTTP_201_CREATED,
    responses=problems(404, 409, *WITH_BODY),
)
async def restore_working_memory(
    agent_session_id: uuid.UUID, body: RestoreCreate, principal: Writer, database: DatabaseDep
) -> WorkingMemoryRead:
    """Make the working memory of a done archive current again, as a new version (an archive
    with generator ``restore`` that covers no new message, one ``RESTORE`` decision per
    section); the next commit updates from it."""
    async with database.tenant(principal.tenant_id) as db:
        restored = await RestoreService(db, principal).restore(agent_session_id, body.archive_seq)
    return WorkingMemoryRead.from_value(restored)


@router.post(
    "/{agent_session_id}:fork",
    status_code=status.HTTP_201_CREATED,
    responses=problems(404, 409, *WITH_BODY),
)
async def fork_session(
    agent_session_id: uuid.UUID, body: ForkCreate, principal: Writer, database: DatabaseDep
) -> AgentSessionRead:
    """A new agent session whose history is this one's up to the end of archive
    ``at_archive`` (or message ``at_seq``) and whose working memory is that version; it shares
    that history instead of copying it, then lives its own life (``lineage`` names the fork
    point)."""
    async with database.tenant(principal.tenant_id) as db:
        service = ForkService(db, principal)
        fork = await service.fork(agent_session_id, at_archive=body.at_archive, at_seq=body.at_seq)
        row, newest = await service.agent_sessions.get_with_newest_archive(fork.agent_session_id)
    return agent_session_read(row, newest)
