"""Request and response bodies for agent sessions and messages (OpenAI chat format, validated)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.validation import require_storable

MessageRole = Literal["system", "user", "assistant", "tool"]


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1)
    arguments: str


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1)
    type: Literal["function"] = "function"
    function: FunctionCall


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str = Field(min_length=1)
    text: str | None = None


class ChatMessage(BaseModel):
    """One message as OpenAI's chat API accepts it; unknown fields are kept as sent."""

    model_config = ConfigDict(extra="allow")

    role: MessageRole
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None

    @model_validator(mode="after")
    def _check_shape(self) -> ChatMessage:
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs 'tool_call_id'")
        if self.tool_calls is not None and self.role != "assistant":
            raise ValueError("only assistant messages may carry 'tool_calls'")
        if self.content is None and not (self.role == "assistant" and self.tool_calls):
            raise ValueError("'content' may be null only in an assistant message with tool_calls")
        return self


class MessageCreate(ChatMessage):
    """A message to append, plus the optional fields that are ours and not the model's."""

    metadata: dict[str, Any] | None = None
    created_at: datetime | None = None

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
    keep_recent_count: int | None = Field(default=None, ge=0, le=10_000)

    @model_validator(mode="after")
    def _storable(self) -> AgentSessionCreate:
        require_storable(self.model_dump())
        return self


class ArchiveBrief(BaseModel):
    archive_seq: int
    start_seq: int
    end_seq: int
    status: str


class AgentSessionRead(BaseModel):
    id: uuid.UUID
    external_id: str | None
    user_id: str | None
    agent_id: str | None
    metadata: dict[str, Any]
    keep_recent_count: int
    message_count: int
    live_message_count: int
    pending_tokens: int
    total_tokens: int
    archive_count: int
    newest_archive: ArchiveBrief | None
    created_at: datetime
    updated_at: datetime


class AgentSessionPage(BaseModel):
    items: list[AgentSessionRead]
    next_cursor: str | None
