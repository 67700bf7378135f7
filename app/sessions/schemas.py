"""Request and response bodies for agent sessions and messages (OpenAI chat format, validated).

A message arrives as ``MessageCreate`` and leaves as ``MessageRead``; inside the service it is a
``records.StoredMessage``. Validation follows the chat-completions request format per role, so a
stored message never makes a later model call fail.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from app.memories.schemas import MemoryPolicyFields
from app.sessions.records import MessageRole, StoredMessage
from app.sessions.shapes import PARTS_BY_ROLE, message_shapes
from app.validation import SEQ_MAX, require_json, require_storable

RECORD_CONTEXTS = (
    "record every context of this agent session in the context ledger unless the request "
    "says record=false (default false: only a request with record=true is recorded)"
)
MAX_UTC_OFFSET = timedelta(hours=15, minutes=59)
"""The widest offset Postgres accepts in a timestamp."""


def _storable_moment(moment: datetime | None) -> datetime | None:
    """A client's time that Postgres and every reader can take: an offset within ±15:59 and,
    in UTC, a year from 1 to 9999."""
    offset = None if moment is None else moment.utcoffset()
    if moment is None or offset is None:
        return moment  # naive: already UTC
    if abs(offset) > MAX_UTC_OFFSET:
        raise ValueError("the UTC offset must be within ±15:59")
    try:
        moment.astimezone(UTC)
    except OverflowError:
        raise ValueError("the time is outside years 1 to 9999 in UTC") from None
    return moment


StorableMoment = Annotated[datetime | None, AfterValidator(_storable_moment)]


def _bounded_json(value: Any) -> Any:
    """Before any other validation: values nested too deep or numbers that are not finite are
    refused as they arrive, so nothing later serializes them (and could fail) first."""
    require_json(value)
    return value


class FunctionCallCreate(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1)
    arguments: str


class ToolCallCreate(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1)
    type: Literal["function"] = "function"
    function: FunctionCallCreate


# Content parts: each closed, as the chat-completions API defines them. A part another model API
# would reject (an unknown type, a text part without text) is refused here, not at the next call.


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextPart(_Part):
    type: Literal["text"]
    text: str


class ImageUrl(_Part):
    url: str = Field(min_length=1)
    detail: Literal["auto", "low", "high"] | None = None


class ImageUrlPart(_Part):
    type: Literal["image_url"]
    image_url: ImageUrl


class InputAudio(_Part):
    data: str = Field(min_length=1)
    format: Literal["wav", "mp3"]


class InputAudioPart(_Part):
    type: Literal["input_audio"]
    input_audio: InputAudio


class FileRef(_Part):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {"required": ["file_data"], "properties": {"file_data": {"type": "string"}}},
                {"required": ["file_id"], "properties": {"file_id": {"type": "string"}}},
            ]
        },
    )
    file_data: str | None = None
    file_id: str | None = None
    filename: str | None = None

    @model_validator(mode="after")
    def _names_a_file(self) -> FileRef:
        if self.file_data is None and self.file_id is None:
            raise ValueError("a file part needs 'file_data' or 'file_id'")
        return self


class FilePart(_Part):
    type: Literal["file"]
    file: FileRef


class RefusalPart(_Part):
    type: Literal["refusal"]
    refusal: str


ContentPart = Annotated[
    TextPart | ImageUrlPart | InputAudioPart | FilePart | RefusalPart, Field(discriminator="type")
]

PART_TYPES_BY_ROLE: dict[str, frozenset[str]] = {
    role: frozenset(parts) for role, parts in PARTS_BY_ROLE.items()
}
"""Which content parts each role may carry in a chat-completions request."""


SentRole = Literal["system", "developer", "user", "assistant", "tool"]
"""The roles an appended message may have: the stored ones, and ``developer`` (filed as system)."""


class MessageCreate(BaseModel):
    """A message to append: one message as OpenAI's chat API accepts it (unknown top-level
    fields are kept as sent), plus the optional ``metadata`` and ``created_at`` that are ours."""

    # The per-role rules of ``_check_shape`` are stated in the schema too (``shapes``), so a
    # client sees from the OpenAPI document alone which messages are refused.
    model_config = ConfigDict(extra="allow", json_schema_extra=message_shapes)

    role: SentRole
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCallCreate] | None = None
    tool_call_id: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: StorableMoment = Field(
        default=None,
        description="when it was said, if not now (offset within ±15:59; years 1 to 9999 in UTC)",
    )

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        return _bounded_json(data)

    @model_validator(mode="after")
    def _check_shape(self) -> MessageCreate:
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs 'tool_call_id'")
        if self.tool_calls is not None and self.role != "assistant":
            raise ValueError("only assistant messages may carry 'tool_calls'")
        if self.content is None and not (self.role == "assistant" and self.tool_calls):
            raise ValueError("'content' may be null only in an assistant message with tool_calls")
        if isinstance(self.content, list):
            if not self.content:
                raise ValueError("'content' must be a string or a non-empty list of parts")
            allowed = PART_TYPES_BY_ROLE[self.role]
            for index, part in enumerate(self.content):
                if part.type not in allowed:
                    raise ValueError(
                        f"content part {index}: a {self.role} message cannot carry a "
                        f"{part.type!r} part (allowed: {', '.join(sorted(allowed))})"
                    )
        return self

    @property
    def stored_role(self) -> MessageRole:
        """The role the service files the message under: a ``developer`` message (what current
        OpenAI SDKs send for instructions) is the system role's equivalent; the message itself
        keeps the role it was sent with."""
        return "system" if self.role == "developer" else self.role

    def openai_message(self) -> dict[str, Any]:
        """The message in OpenAI format as stored: our own fields removed, null fields omitted
        except an assistant's null ``content`` beside its tool calls (what the API expects)."""
        stored = self.model_dump(mode="json", exclude={"metadata", "created_at"}, exclude_none=True)
        if self.content is None:
            stored["content"] = None
        return stored


class MessageBatchCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    messages: list[MessageCreate] = Field(min_length=1)


class MessageRead(BaseModel):
    seq: int
    role: MessageRole
    turn: int
    token_count: int
    message: dict[str, Any]
    metadata: dict[str, Any] | None
    created_at: datetime
    archived: bool
    retracted_at: datetime | None = Field(
        default=None,
        description="when its agent retracted it: left out of the context; null if it was not",
    )
    redacted_at: datetime | None = Field(
        default=None,
        description="when its content was replaced by [redacted]; null if it was not",
    )

    @classmethod
    def from_stored(cls, stored: StoredMessage, *, archived_upto_seq: int) -> MessageRead:
        return cls(
            seq=stored.seq,
            role=stored.role,
            turn=stored.turn,
            token_count=stored.token_count,
            message=dict(stored.message),
            metadata=None if stored.metadata is None else dict(stored.metadata),
            created_at=stored.created_at,
            archived=stored.seq <= archived_upto_seq,
            retracted_at=stored.retracted_at,
            redacted_at=stored.redacted_at,
        )


class AppendResult(BaseModel):
    message: MessageRead
    pending_tokens: int
    live_message_count: int


class BatchAppendResult(BaseModel):
    messages: list[MessageRead]
    pending_tokens: int
    live_message_count: int


class MessagePage(BaseModel):
    items: list[MessageRead]
    next_after_seq: int | None = Field(
        description="pass as after_seq to read the next page; null at the end"
    )


class AgentSessionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    external_id: str | None = Field(default=None, min_length=1, max_length=256)
    user_id: str | None = Field(default=None, min_length=1, max_length=256)
    agent_id: str | None = Field(default=None, min_length=1, max_length=256)
    metadata: dict[str, Any] = Field(default_factory=dict)
    keep_recent_count: int | None = Field(default=None, ge=0, le=10_000, strict=True)
    memory_policy: MemoryPolicyFields | None = Field(
        default=None,
        description="the agent session's own memory policy; a field not set here falls to its "
        "user's default, then to on",
    )
    record_contexts: bool = Field(default=False, strict=True, description=RECORD_CONTEXTS)

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        return _bounded_json(data)

    @model_validator(mode="after")
    def _storable(self) -> AgentSessionCreate:
        require_storable(self.model_dump())
        return self


class AgentSessionUpdate(BaseModel):
    """What may change on an agent session: a field left out stays as it is."""

    model_config = ConfigDict(extra="forbid")
    memory_policy: MemoryPolicyFields | None = Field(
        default=None,
        description="replaces the agent session's own memory policy; null removes it (every "
        "field then falls to its user's default, then to on)",
    )
    record_contexts: bool = Field(default=False, strict=True, description=RECORD_CONTEXTS)


class ArchiveBrief(BaseModel):
    archive_seq: int
    start_seq: int
    end_seq: int
    status: str


class LineageRead(BaseModel):
    """Where a fork left its parent: it shares the parent's history up to there."""

    parent_session_id: uuid.UUID
    archive_seq: int = Field(
        description="the fork's working memory was the parent's version of this archive "
        "(0: none); its own archives are numbered after it"
    )
    seq: int = Field(description="the parent's last message in the fork's history")


class AgentSessionRead(BaseModel):
    id: uuid.UUID
    external_id: str | None
    user_id: str | None
    agent_id: str | None
    metadata: dict[str, Any]
    keep_recent_count: int
    memory_policy: MemoryPolicyFields | None = Field(
        description="the agent session's own memory policy; null when it sets none"
    )
    record_contexts: bool = Field(description=RECORD_CONTEXTS)
    message_count: int
    live_message_count: int
    pending_tokens: int
    total_tokens: int
    archive_count: int
    newest_archive: ArchiveBrief | None
    lineage: LineageRead | None = Field(
        default=None, description="for a fork: its parent and the fork point; null otherwise"
    )
    created_at: datetime
    updated_at: datetime


class AgentSessionPage(BaseModel):
    items: list[AgentSessionRead]
    next_cursor: str | None


class RetractCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seq: int | None = Field(
        default=None,
        ge=1,
        le=SEQ_MAX,
        description="the live message to retract; default: the newest one not retracted yet",
    )


class RetractionRead(BaseModel):
    retracted: MessageRead | None = Field(
        description="the retracted message as stored; null when no live message was left"
    )
    retracted_at: datetime | None
