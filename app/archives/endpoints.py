"""HTTP routes for commits, archives and working memory (``/v1/sessions/{id}/…``)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, status
from fastapi.responses import JSONResponse

from app.archives.schemas import (
    ArchiveExpanded,
    ArchivePage,
    ArchiveRead,
    CommitCreate,
    CommitRead,
    SectionHistoryPage,
    WorkingMemoryRead,
)
from app.archives.service import ArchiveService, archive_read
from app.archives.worker import ArchiveWorker
from app.deps import DatabaseDep, SettingsDep
from app.errors import InvalidInput
from app.sessions.endpoints import message_read
from app.sessions.service import AgentSessionService
from app.tenancy.auth import Reader, Writer
from app.wm.sections import SECTIONS, empty_sections, render

router = APIRouter(prefix="/v1/sessions", tags=["archives"])

INT32_MAX = 2**31 - 1

SectionName = Annotated[str | None, Query(description="one of the seven section headers")]
ArchiveSeq = Annotated[int, Path(ge=1, le=INT32_MAX)]
SEQ_MAX = 2**63 - 1


def worker_of(request: Request) -> ArchiveWorker:
    found: ArchiveWorker = request.app.state.worker
    return found


def empty_working_memory() -> WorkingMemoryRead:
    bodies = empty_sections()
    return WorkingMemoryRead(
        archive_seq=0,
        covered_start_seq=0,
        covered_end_seq=0,
        markdown=render(bodies),
        sections={section.value: "" for section in SECTIONS},
        decisions=[],
        generator=None,
        tokens=0,
    )


@router.post(
    "/{agent_session_id}/commit",
    response_model=CommitRead,
    responses={202: {"model": CommitRead, "description": "accepted, or still running"}},
)
async def commit(
    agent_session_id: uuid.UUID,
    request: Request,
    principal: Writer,
    database: DatabaseDep,
    settings: SettingsDep,
    body: CommitCreate | None = None,
) -> JSONResponse:
    body = body or CommitCreate()
    async with database.tenant(principal.tenant_id) as db:
        outcome = await ArchiveService(db, principal).commit(
            agent_session_id, body.keep_recent_count
        )
    if outcome.archive is None:
        skipped = CommitRead(
            status="skipped",
            reason=outcome.skipped,
            archive=None,
            working_memory=None,
            pending_tokens=outcome.pending_tokens,
            live_message_count=outcome.live_message_count,
        )
        return JSONResponse(skipped.model_dump(mode="json"), status_code=status.HTTP_200_OK)
    worker = worker_of(request)
    worker.wakeup.set()
    archive_seq = outcome.archive.archive_seq
    if body.wait:
        timeout = body.wait_timeout_s or settings.commit_wait_timeout_s
        await worker.drain(principal.tenant_id, agent_session_id, archive_seq, timeout_s=timeout)
    async with database.tenant(principal.tenant_id) as db:
        service = ArchiveService(db, principal)
        archive = await service.get(agent_session_id, archive_seq)
        working_memory = (
            await service.working_memory_of(archive) if archive.status == "done" else None
        )
    finished = archive.status in ("done", "failed")
    read = CommitRead(
        status=(archive.status if finished else "running") if body.wait else "accepted",
        archive=archive_read(archive),
        working_memory=working_memory,
        pending_tokens=outcome.pending_tokens,
        live_message_count=outcome.live_message_count,
    )
    code = status.HTTP_200_OK if body.wait and finished else status.HTTP_202_ACCEPTED
    return JSONResponse(read.model_dump(mode="json"), status_code=code)


@router.get("/{agent_session_id}/archives")
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


@router.get("/{agent_session_id}/archives/{archive_seq:int}")
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
        service = ArchiveService(db, principal)
        archive = await service.get(agent_session_id, archive_seq)
        start = max(archive.start_seq - 1, after_seq or 0)
        _, messages = await AgentSessionService(db, principal).read_messages(
            agent_session_id, after_seq=start, limit=limit, upto_seq=archive.end_seq
        )
        decisions = await service.decisions(archive)
    items = [message_read(row, archive.end_seq) for row in messages]
    next_after = items[-1].seq if items and items[-1].seq < archive.end_seq else None
    return ArchiveExpanded(
        **archive_read(archive).model_dump(),
        overview=archive.overview,
        legacy_overview=archive.legacy_overview,
        decisions=decisions,
        messages=items,
        next_after_seq=next_after,
    )


@router.post("/{agent_session_id}/archives/{archive_seq:int}:retry")
async def retry_archive(
    agent_session_id: uuid.UUID,
    archive_seq: ArchiveSeq,
    request: Request,
    principal: Writer,
    database: DatabaseDep,
) -> ArchiveRead:
    async with database.tenant(principal.tenant_id) as db:
        archive = await ArchiveService(db, principal).retry(agent_session_id, archive_seq)
    worker_of(request).wakeup.set()
    return archive_read(archive)


@router.get("/{agent_session_id}/working-memory")
async def working_memory(
    agent_session_id: uuid.UUID, principal: Reader, database: DatabaseDep
) -> WorkingMemoryRead:
    async with database.tenant(principal.tenant_id) as db:
        current = await ArchiveService(db, principal).working_memory(agent_session_id)
    return current or empty_working_memory()


@router.get("/{agent_session_id}/working-memory/history")
async def working_memory_history(
    agent_session_id: uuid.UUID,
    principal: Reader,
    database: DatabaseDep,
    section: SectionName = None,
    after_archive_seq: Annotated[int, Query(ge=0, le=INT32_MAX)] = 0,
    limit: Annotated[int, Query(ge=1, le=700)] = 70,
) -> SectionHistoryPage:
    if section is not None and section not in {s.value for s in SECTIONS}:
        raise InvalidInput(
            f"unknown section {section!r}",
            errors=[{"loc": ["query", "section"], "msg": "not one of the seven sections"}],
        )
    async with database.tenant(principal.tenant_id) as db:
        items, next_after = await ArchiveService(db, principal).history(
            agent_session_id, section=section, after_archive_seq=after_archive_seq, limit=limit
        )
    return SectionHistoryPage(items=items, next_after_archive_seq=next_after)
