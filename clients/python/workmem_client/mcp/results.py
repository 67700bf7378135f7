"""What the MCP tools return: small typed results (the SDK publishes their JSON schema as each
tool's output schema), built from the client's answers. Never calls anything."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ContextResult(BaseModel):
    agent_session_id: str
    system_prompt_addition: str = Field(description="add to your system prompt")
    messages: list[dict[str, Any]] = Field(
        description="OpenAI chat messages: the working-memory summary, then the newest raw ones"
    )
    tokens: int = Field(description="tokens of the messages and the system-prompt addition")
    token_budget: int
    archive_count: int
    context_id: str | None = Field(
        default=None, description="the context ledger's row, when asked to record"
    )


class AppendedResult(BaseModel):
    agent_session_id: str
    seqs: list[int] = Field(description="the seqs the messages were stored under")
    pending_tokens: int = Field(description="tokens the next commit would archive")
    live_message_count: int


class CommitResult(BaseModel):
    agent_session_id: str
    status: str = Field(description="accepted, skipped, done, failed or running")
    reason: str | None = Field(description="why a commit was skipped")
    archive_seq: int | None
    working_memory: str | None = Field(description="the new working memory, once done")


class MemoryHit(BaseModel):
    id: str
    category: str
    content: str
    score: float = Field(description="cosine similarity to the query")
    user_id: str | None


class MemoriesResult(BaseModel):
    items: list[MemoryHit]


class PinResult(BaseModel):
    id: str
    text: str | None
    seq: int | None
