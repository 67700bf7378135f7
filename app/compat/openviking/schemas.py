"""Request and result bodies of the OpenViking-compatible API, in OpenViking's field names.

Each result is built from what ``/v1`` reads (``AgentSessionRead``, ``ArchiveRead``) or from an
assembled context, never from a database row. Options OpenViking's clients may send and workmem
has no use for (auto-commit policies, extraction settings, telemetry) are accepted and ignored.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, Field

from app.archives.schemas import ArchiveRead, TurnRetentionFields
from app.compat.openviking.ids import (
    SESSION_ID_MAX_LENGTH,
    SESSION_ID_PATTERN,
    archive_id,
    archive_uri,
    session_uri,
    task_id,
)
from app.compat.openviking.memory_policy import read_policy
from app.compat.openviking.parts import MessageIn, to_parts
from app.sessions.records import StoredMessage
from app.sessions.schemas import AgentSessionRead
from app.tenancy.principal import Principal

BATCH_MAX_MESSAGES: Final = 100
"""OpenViking's limit per ``messages/batch``."""
KEEP_RECENT_MAX: Final = 10_000
DEFAULT_USER: Final = "default"
"""The user OpenViking names when there is none; ours when an agent session has no user_id."""

SessionId = Annotated[
    str,
    Field(
        max_length=SESSION_ID_MAX_LENGTH,
        pattern=SESSION_ID_PATTERN,
        description="up to 255 characters of A-Z a-z 0-9 _ . @ - (no path separators), not "
        "`.` or `..`",
    ),
]

TaskStatus = Literal["pending", "running", "completed", "failed"]
# Task statuses by archive status: an archive is the task of the commit that created it.
TASK_STATUS: Final[Mapping[str, TaskStatus]] = {
    "pending": "pending",
    "running": "running",
    "done": "completed",
    "failed": "failed",
    "cleared": "failed",
}


def _policy(value: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if value is None else read_policy(value).to_json()


PolicyIn = Annotated[
    dict[str, Any] | None,
    AfterValidator(_policy),
    Field(
        default=None,
        description="the session's memory policy: `working_memory`, `long_term_extraction` "
        "(OpenViking's `self.enabled`), `memory_types`; `peer` is accepted and not acted on",
    ),
]


class SessionCreate(BaseModel):
    session_id: SessionId | None = Field(
        default=None, description="the client's id; a new one is generated when left out"
    )
    memory_policy: PolicyIn


class SessionConfigIn(BaseModel):
    """``PATCH /sessions/{id}/config``: a field left out stays as it is."""

    memory_policy: PolicyIn


class SessionConfigOut(BaseModel):
    session_id: str
    memory_policy: dict[str, Any] | None = Field(
        description="the session's own memory policy, in workmem's field names; null when it "
        "sets none"
    )
    auto_commit_policy: None = None


class MessageBatchIn(BaseModel):
    messages: list[MessageIn] = Field(min_length=1, max_length=BATCH_MAX_MESSAGES)


class CommitIn(TurnRetentionFields):
    keep_recent_count: int = Field(
        default=0,
        ge=0,
        le=KEEP_RECENT_MAX,
        strict=True,
        description="newest live messages kept raw (OpenViking's default: 0, archive all)",
    )


class UserRef(BaseModel):
    account_id: str = Field(description="the tenant")
    user_id: str


class SessionCreated(BaseModel):
    session_id: str
    uri: str
    user: UserRef
    memory_policy: dict[str, Any] | None = None
    auto_commit_policy: None = None


class SessionListed(BaseModel):
    session_id: str
    uri: str
    is_dir: bool = True
    message_count: int = Field(description="live messages: not archived yet")
    total_message_count: int
    commit_count: int
    pending_tokens: int
    created_at: datetime
    updated_at: datetime


class SessionInfo(SessionListed):
    keep_recent_count: int
    memories_extracted: dict[str, int] = Field(
        description="long-term memories extracted from the session: none yet"
    )
    user: UserRef
    memory_policy: dict[str, Any] | None = Field(
        default=None, description="the session's own memory policy; null when it sets none"
    )
    auto_commit_policy: None = None


class MessageAdded(BaseModel):
    session_id: str
    message_count: int = Field(description="live messages after the append")
    pending_tokens: int


class MessagesAdded(MessageAdded):
    added: int = Field(description="messages of the batch, as OpenViking counts them")


class SessionDeleted(BaseModel):
    session_id: str


class CommitOut(BaseModel):
    session_id: str
    status: Literal["accepted", "skipped"]
    task_id: str | None
    archive_uri: str | None
    archive_id: str | None
    archived: bool
    reason: str | None = Field(
        default=None, description="why nothing was archived: no_messages, all_within_keep_window"
    )


class ArchiveAbstract(BaseModel):
    archive_id: str
    abstract: str


class ContextStats(BaseModel):
    totalArchives: int
    includedArchives: int = Field(description="1 when the working memory is in the answer")
    droppedArchives: int
    failedArchives: int = Field(description="failed archives the working memory does not cover")
    activeTokens: int
    archiveTokens: int


class WorkingMemoryText(BaseModel):
    markdown: str


class ContextOut(BaseModel):
    latest_archive_overview: str = Field(description="the working memory, as it fit the budget")
    latest_archive_id: str
    working_memory: WorkingMemoryText | None
    pre_archive_abstracts: list[ArchiveAbstract] = Field(
        description="always empty: the working memory already covers every older archive"
    )
    messages: list[dict[str, Any]] = Field(description="newer messages, in parts format")
    estimatedTokens: int
    stats: ContextStats
    context_id: uuid.UUID | None = Field(
        default=None,
        description="the context ledger's row of this context when it was recorded (record=true; "
        "a workmem extension): GET /v1/sessions/{id}/contexts/{context_id}",
    )


class ArchiveOut(BaseModel):
    archive_id: str
    abstract: str
    overview: str
    messages: list[dict[str, Any]]


class TaskOut(BaseModel):
    task_id: str
    task_type: Literal["session_commit"] = "session_commit"
    status: TaskStatus
    created_at: float = Field(description="seconds since the epoch")
    updated_at: float
    resource_id: str = Field(description="the session")
    result: dict[str, Any] | None
    error: str | None


def user_ref(principal: Principal, user_id: str | None) -> UserRef:
    return UserRef(account_id=str(principal.tenant_id), user_id=user_id or DEFAULT_USER)


def session_listed(read: AgentSessionRead, session_id: str) -> SessionListed:
    return SessionListed(
        session_id=session_id,
        uri=session_uri(session_id),
        message_count=read.live_message_count,
        total_message_count=read.message_count,
        commit_count=read.archive_count,
        pending_tokens=read.pending_tokens,
        created_at=read.created_at,
        updated_at=read.updated_at,
    )


def session_info(read: AgentSessionRead, session_id: str, principal: Principal) -> SessionInfo:
    return SessionInfo(
        **session_listed(read, session_id).model_dump(),
        keep_recent_count=read.keep_recent_count,
        memories_extracted={"total": 0},
        user=user_ref(principal, read.user_id),
        memory_policy=own_policy(read),
    )


def own_policy(read: AgentSessionRead) -> dict[str, Any] | None:
    policy = read.memory_policy
    return None if policy is None else policy.model_dump(exclude_none=True)


def archive_out(
    read: ArchiveRead, overview: str | None, messages: list[StoredMessage]
) -> ArchiveOut:
    return ArchiveOut(
        archive_id=archive_id(read.archive_seq),
        abstract=read.abstract or "",
        overview=overview or "",
        messages=to_parts(messages),
    )


def task_out(read: ArchiveRead, session_id: str, agent_session_id: uuid.UUID) -> TaskOut:
    """The task of a commit is its archive: its status, and once done what it produced."""
    status = TASK_STATUS[read.status.value]
    result = None
    if status == "completed":
        usage = read.usage or {}
        prompt = int(usage.get("prompt_tokens", 0))
        completion = int(usage.get("completion_tokens", 0))
        result = {
            "session_id": session_id,
            "archive_id": archive_id(read.archive_seq),
            "archive_uri": archive_uri(session_id, read.archive_seq),
            # No long-term memory is extracted yet; an empty object is OpenViking's own "none"
            # (counts by category, only categories with at least one memory).
            "memories_extracted": {},
            "token_usage": {
                "llm": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
                "embedding": {"total_tokens": 0},
                "total": {"total_tokens": prompt + completion},
            },
        }
    error = None
    if status == "failed":
        error = f"{read.error_stage}: {read.last_error}"
    finished = read.finished_at or read.created_at
    return TaskOut(
        task_id=task_id(agent_session_id, read.archive_seq),
        status=status,
        created_at=read.created_at.timestamp(),
        updated_at=finished.timestamp(),
        resource_id=session_id,
        result=result,
        error=error,
    )
