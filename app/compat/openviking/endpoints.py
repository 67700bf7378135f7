"""HTTP routes of the OpenViking-compatible API: sessions, messages, commit, context, archives,
tasks.

Owns what a request means in OpenViking's terms (a session id is an ``external_id``, messages
auto-create their session, a commit's task is its archive) and the request's transactions; the
work is done by the same services as ``/v1``. Never imports a repository or the database.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Query, Response
from pydantic import ValidationError

from app.archives import flows
from app.archives.dependencies import WorkerDep
from app.archives.presenter import archive_read
from app.archives.service import ArchiveService
from app.compat.openviking import ids
from app.compat.openviking.envelope import ERROR_RESPONSES, Envelope, ResourceNotFound
from app.compat.openviking.parts import MessageIn, ToolCallIds, ToolPart, to_openai
from app.compat.openviking.presenter import context_out
from app.compat.openviking.schemas import (
    ArchiveOut,
    CommitIn,
    CommitOut,
    ContextOut,
    MessageAdded,
    MessageBatchIn,
    MessagesAdded,
    SessionConfigIn,
    SessionConfigOut,
    SessionCreate,
    SessionCreated,
    SessionDeleted,
    SessionInfo,
    SessionListed,
    TaskOut,
    archive_out,
    own_policy,
    session_info,
    session_listed,
    task_out,
    user_ref,
)
from app.context.budget import DEFAULT_TOKEN_BUDGET, MAX_TOKEN_BUDGET, plan_budget
from app.context.fill import DEFAULT_FILL
from app.context.service import ContextService
from app.deps import DatabaseDep, SettingsDep
from app.errors import Forbidden, InvalidInput, NotFound, field_errors
from app.ledger.service import LedgerService
from app.memories.schemas import MemoryPolicyFields
from app.sessions.appending import AppendFlow
from app.sessions.dependencies import AppendFlowDep
from app.sessions.presenter import agent_session_read
from app.sessions.schemas import AgentSessionCreate, MessageCreate
from app.sessions.service import AgentSessionService, AppendOutcome, Limits
from app.tenancy.auth import Reader, Writer
from app.tenancy.principal import Principal
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/sessions", tags=["sessions"], responses=ERROR_RESPONSES, route_class=StrictJsonRoute
)
tasks_router = APIRouter(
    prefix="/tasks", tags=["tasks"], responses=ERROR_RESPONSES, route_class=StrictJsonRoute
)

NEW_SESSION_KEEP_RECENT = 0
"""OpenViking's sessions start with no keep window, so ``pending_tokens`` counts every message
until the first commit names one."""
LIST_LIMIT_MAX = 1000
NEXT_CURSOR_HEADER = "X-Next-Cursor"

SessionPath = Annotated[
    str,
    Path(
        max_length=ids.SESSION_ID_MAX_LENGTH,
        pattern=ids.SESSION_ID_PATTERN,
        description="the session's id: up to 255 characters of A-Z a-z 0-9 _ . @ -, not `.` "
        "or `..`",
    ),
]


async def _agent_session_id(service: AgentSessionService, session_id: str) -> uuid.UUID:
    try:
        return (await service.get_by_external_id(session_id)).agent_session_id
    except NotFound as error:
        raise ResourceNotFound("session", session_id) from error


@router.post("")
async def create_session(
    principal: Writer,
    database: DatabaseDep,
    settings: SettingsDep,
    body: SessionCreate | None = None,
) -> Envelope[SessionCreated]:
    session_id = (body.session_id if body is not None else None) or ids.new_session_id()
    policy = None if body is None or body.memory_policy is None else body.memory_policy
    create = AgentSessionCreate(
        external_id=session_id,
        keep_recent_count=NEW_SESSION_KEEP_RECENT,
        memory_policy=None if policy is None else MemoryPolicyFields.model_validate(policy),
    )
    async with database.tenant(principal.tenant_id) as db:
        row = await AgentSessionService(db, principal, Limits.from_settings(settings)).create(
            create
        )
    created = SessionCreated(
        session_id=session_id,
        uri=ids.session_uri(session_id),
        user=user_ref(principal, row.user_id),
        memory_policy=policy,
    )
    return Envelope(result=created)


@router.patch("/{session_id}/config")
async def update_session_config(
    session_id: SessionPath, body: SessionConfigIn, principal: Writer, database: DatabaseDep
) -> Envelope[SessionConfigOut]:
    """Change the session's settings the body names: its memory policy (``null`` removes it).
    Auto-commit, extraction settings and telemetry are accepted and ignored."""
    async with database.tenant(principal.tenant_id) as db:
        service = AgentSessionService(db, principal)
        agent_session_id = await _agent_session_id(service, session_id)
        if "memory_policy" in body.model_fields_set:
            stored = body.memory_policy
            policy = None if stored is None else MemoryPolicyFields.model_validate(stored).policy()
            await service.set_memory_policy(agent_session_id, policy)
        read = agent_session_read(await service.get(agent_session_id))
    return Envelope(result=SessionConfigOut(session_id=session_id, memory_policy=own_policy(read)))


@router.get("")
async def list_sessions(
    principal: Reader,
    database: DatabaseDep,
    response: Response,
    cursor: str | None = Query(default=None, description=f"the {NEXT_CURSOR_HEADER} of a page"),
    limit: Annotated[int, Query(ge=1, le=LIST_LIMIT_MAX)] = LIST_LIMIT_MAX,
) -> Envelope[list[SessionListed]]:
    """Sessions with a client-given id, oldest first. OpenViking's answer is a bare list, so the
    cursor of the next page (when there is one) is the ``X-Next-Cursor`` header."""
    async with database.tenant(principal.tenant_id) as db:
        rows, next_cursor = await AgentSessionService(db, principal).page(
            cursor=cursor, limit=limit, with_external_id=True
        )
    if next_cursor is not None:
        response.headers[NEXT_CURSOR_HEADER] = next_cursor
    items = []
    for row, newest in rows:
        read = agent_session_read(row, newest)
        items.append(session_listed(read, read.external_id or ""))
    return Envelope(result=items)


@router.get("/{session_id}")
async def get_session(
    session_id: SessionPath,
    principal: Reader,
    database: DatabaseDep,
    settings: SettingsDep,
    auto_create: Annotated[
        bool, Query(description="create the session when it does not exist (needs a writer key)")
    ] = False,
) -> Envelope[SessionInfo]:
    async with database.tenant(principal.tenant_id) as db:
        # The settings' limits: a session created here counts against the tenant's quota.
        service = AgentSessionService(db, principal, Limits.from_settings(settings))
        if auto_create and principal.can_write:
            row = await service.get_or_create(session_id, keep_recent_count=NEW_SESSION_KEEP_RECENT)
        else:
            try:
                row = await service.get_by_external_id(session_id)
            except NotFound as error:
                if auto_create:
                    raise Forbidden(
                        "this API key is read-only: it cannot create a session"
                    ) from error
                raise ResourceNotFound("session", session_id) from error
    return Envelope(result=session_info(agent_session_read(row), session_id, principal))


@router.delete("/{session_id}")
async def delete_session(
    session_id: SessionPath, principal: Writer, database: DatabaseDep
) -> Envelope[SessionDeleted]:
    async with database.tenant(principal.tenant_id) as db:
        service = AgentSessionService(db, principal)
        await service.delete(await _agent_session_id(service, session_id))
    return Envelope(result=SessionDeleted(session_id=session_id))


async def _append(
    session_id: str,
    messages: list[MessageIn],
    principal: Principal,
    flow: AppendFlow,
) -> AppendOutcome:
    """Append, creating the session first when it does not exist: a batch that fails
    validation stores nothing, not even the session. Tool-call ids are made unique within the
    session, so its history stays a conversation a model API accepts: a batch with tool parts
    reads the session's ids and is stored under the session's lock (docs/openviking-api.md)."""

    def creates(seen: set[str]) -> list[MessageCreate]:
        ids = ToolCallIds(seen)
        try:
            return [
                MessageCreate.model_validate(stored)
                for message in messages
                for stored in to_openai(message, ids)
            ]
        except ValidationError as error:  # a rule only the OpenAI form of a message can break
            raise InvalidInput(
                "a message is not valid once in OpenAI's format",
                errors=field_errors(error.errors()),
            ) from error

    if any(isinstance(part, ToolPart) for message in messages for part in message.parts or ()):
        return await flow.append_named_with_call_ids(
            principal, session_id, creates, keep_recent_count=NEW_SESSION_KEEP_RECENT
        )
    return await flow.append_named(
        principal, session_id, creates(set()), keep_recent_count=NEW_SESSION_KEEP_RECENT
    )


@router.post("/{session_id}/messages")
async def add_message(
    session_id: SessionPath,
    body: MessageIn,
    principal: Writer,
    flow: AppendFlowDep,
) -> Envelope[MessageAdded]:
    outcome = await _append(session_id, [body], principal, flow)
    return Envelope(
        result=MessageAdded(
            session_id=session_id,
            message_count=outcome.live_message_count,
            pending_tokens=outcome.pending_tokens,
        )
    )


@router.post("/{session_id}/messages/batch")
async def add_messages(
    session_id: SessionPath,
    body: MessageBatchIn,
    principal: Writer,
    flow: AppendFlowDep,
) -> Envelope[MessagesAdded]:
    outcome = await _append(session_id, body.messages, principal, flow)
    return Envelope(
        result=MessagesAdded(
            session_id=session_id,
            message_count=outcome.live_message_count,
            pending_tokens=outcome.pending_tokens,
            added=len(body.messages),
        )
    )


@router.post("/{session_id}/commit")
async def commit_session(
    session_id: SessionPath,
    principal: Writer,
    database: DatabaseDep,
    settings: SettingsDep,
    worker: WorkerDep,
    body: CommitIn | None = None,
) -> Envelope[CommitOut]:
    """Phase 1 now; the working memory is made in the background, and the answer's task id
    follows it (``GET /api/v1/tasks/{task_id}``)."""
    body = body or CommitIn()
    keep = body.turn_retention() or body.keep_recent_count
    async with database.tenant(principal.tenant_id) as db:
        agent_session_id = await _agent_session_id(AgentSessionService(db, principal), session_id)
    result = await flows.commit(
        database,
        worker,
        principal,
        agent_session_id,
        keep=keep,
        wait=False,
        timeout_s=settings.commit_wait_timeout_s,
        with_working_memory=False,
    )
    archive = result.archive
    if archive is None:
        skipped = CommitOut(
            session_id=session_id,
            status="skipped",
            task_id=None,
            archive_uri=None,
            archive_id=None,
            archived=False,
            reason=result.outcome.skipped,
        )
        return Envelope(result=skipped)
    accepted = CommitOut(
        session_id=session_id,
        status="accepted",
        task_id=ids.task_id(agent_session_id, archive.archive_seq),
        archive_uri=ids.archive_uri(session_id, archive.archive_seq),
        archive_id=ids.archive_id(archive.archive_seq),
        archived=True,
    )
    return Envelope(result=accepted)


@router.get("/{session_id}/context")
async def get_session_context(
    session_id: SessionPath,
    principal: Reader,
    database: DatabaseDep,
    token_budget: Annotated[
        int,
        Query(
            ge=1,
            le=MAX_TOKEN_BUDGET,
            description="the most tokens the overview and the messages may take together",
        ),
    ] = DEFAULT_TOKEN_BUDGET,
    fill: Annotated[
        bool,
        Query(description="fill the room left with the newest messages the overview covers"),
    ] = DEFAULT_FILL,
    record: Annotated[
        bool | None,
        Query(
            description="record what this context was made of in the context ledger; the "
            "answer's context_id names it (a workmem extension). Left out: as the agent "
            "session's record_contexts says"
        ),
    ] = None,
) -> Envelope[ContextOut]:
    """The working memory and the newest messages after it, within ``token_budget``. The client
    chose the budget for what it sends, so no reply reserve is taken out of it."""
    async with database.tenant(principal.tenant_id) as db:
        agent_session_id = await _agent_session_id(AgentSessionService(db, principal), session_id)
        context = await ContextService(db, principal).assemble(
            agent_session_id, plan_budget(token_budget, 0), fill=fill
        )
        context_id = await LedgerService(db, principal).record_if(
            context, record, source="openviking"
        )
    return Envelope(result=context_out(context, context_id))


@router.get("/{session_id}/archives/{archive_id}")
async def get_session_archive(
    session_id: SessionPath,
    principal: Reader,
    database: DatabaseDep,
    archive_id: Annotated[str, Path(description="archive_001, archive_002, …")],
) -> Envelope[ArchiveOut]:
    """One completed archive, whole: its overview (the working memory after it), abstract and
    every message. An archive still being processed, or failed, is not found, as in OpenViking."""
    archive_seq = ids.parse_archive_id(archive_id)
    if archive_seq is None:
        raise ResourceNotFound("archive", archive_id)
    async with database.tenant(principal.tenant_id) as db:
        service = AgentSessionService(db, principal)
        agent_session_id = await _agent_session_id(service, session_id)
        try:
            archive = await ArchiveService(db, principal).get(agent_session_id, archive_seq)
        except NotFound as error:
            raise ResourceNotFound("archive", archive_id) from error
        if archive.status != "done":
            raise ResourceNotFound("archive", archive_id)
        messages = await service.messages_between(
            agent_session_id,
            after_seq=archive.start_seq - 1,
            upto_seq=archive.end_seq,
            limit=archive.end_seq - archive.start_seq + 1,
        )
    overview = archive.overview or archive.legacy_overview
    return Envelope(result=archive_out(archive_read(archive), overview, messages))


@tasks_router.get("/{task_id}")
async def get_task(
    task_id: Annotated[str, Path(description="the task_id a commit answered")],
    principal: Reader,
    database: DatabaseDep,
) -> Envelope[TaskOut]:
    """The task of a commit: its archive's state. Resolvable as long as the session exists."""
    parsed = ids.parse_task_id(task_id)
    if parsed is None:
        raise ResourceNotFound("task", task_id)
    agent_session_id, archive_seq = parsed
    async with database.tenant(principal.tenant_id) as db:
        try:
            # The agent session first: its read applies the credential's user binding.
            row = await AgentSessionService(db, principal).get(agent_session_id)
            archive = await ArchiveService(db, principal).get(agent_session_id, archive_seq)
        except NotFound as error:
            raise ResourceNotFound("task", task_id) from error
    if row.external_id is None:
        raise ResourceNotFound("task", task_id)
    return Envelope(result=task_out(archive_read(archive), row.external_id, agent_session_id))
