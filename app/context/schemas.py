"""Response bodies of the assembled context and of compact (DESIGN 7).

Field names and reason strings here are the API; they never carry internal objects or SQL rows.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field

ArchiveStatus = Literal["pending", "running", "done", "failed"]


class ContextWorkingMemory(BaseModel):
    archive_seq: int
    covered_start_seq: int
    covered_end_seq: int
    sections: dict[str, str] = Field(description="the full sections, before any reduction")
    tokens: int = Field(description="tokens of the full sections, from their stored counts")
    is_legacy: bool
    generator: str | None


class PreservedTail(BaseModel):
    archive_seq: int = Field(description="the newest archive, whose commit kept this tail raw")
    start_seq: int
    end_seq: int
    message_count: int
    tokens: int
    keep_recent_count: int | None
    in_context: int = Field(description="how many of the tail's messages are in 'messages'")


class ArchiveIndexEntry(BaseModel):
    archive_seq: int
    start_seq: int
    end_seq: int
    status: ArchiveStatus
    abstract: str | None
    in_context: Literal["summary", "raw", "partial", "none"] = Field(
        description="summary: covered by the summary message; raw / partial / none: how many of "
        "its messages are in 'messages' raw"
    )


class ContextTokens(BaseModel):
    budget: int
    reserved: int = Field(description="kept free for the model's reply")
    usable: int = Field(description="budget - reserved: what the context may use")
    wm_layer: int = Field(description="the most the summary could take in this request")
    system_prompt_addition: int
    wm: int = Field(description="the summary message as sent")
    messages: int = Field(description="the raw messages as sent, from their stored counts")
    total: int = Field(description="system_prompt_addition + wm + messages")
    history_total: int = Field(description="the whole history, from the agent session's counter")
    over_budget: bool = Field(
        description="total > usable: only when the newest user message alone is larger"
    )


class WmCutRead(BaseModel):
    kind: Literal["items", "section", "text"]
    section: str | None
    removed: int = Field(description="items (lines, for a legacy text) the cut took out")


class DroppedMessage(BaseModel):
    seq: int
    reason: Literal[
        "orphan_tool_result",
        "unanswered_tool_calls",
        "awaiting_tool_results",
        "invalid_tool_calls",
    ]


class SeqRange(BaseModel):
    start_seq: int
    end_seq: int


class ContextStats(BaseModel):
    messages_unsummarised: int = Field(description="messages after the summary's coverage")
    messages_included: int
    messages_omitted: int = Field(description="unsummarised messages left out for the budget")
    omitted_ranges: list[SeqRange]
    dropped: list[DroppedMessage] = Field(
        description="messages never sent because a chat server would reject them as they are"
    )
    sanitised_messages: int = Field(
        description="messages sent without fields the chat API does not accept"
    )
    newest_user_seq: int | None
    wm_cuts: list[WmCutRead] = Field(description="reductions of the summary, in the order made")
    summary_omitted: bool = Field(description="a summary exists but not even its skeleton fit")
    hint_omitted: bool


class ContextRead(BaseModel):
    agent_session_id: uuid.UUID
    system_prompt_addition: str
    messages: list[dict[str, Any]] = Field(
        description="OpenAI chat messages, ready for chat.completions.create(messages=...)"
    )
    working_memory: ContextWorkingMemory | None
    preserved_tail: PreservedTail | None
    archive_index: list[ArchiveIndexEntry] = Field(description="newest first, at most 20")
    archive_count: int
    tokens: ContextTokens
    stats: ContextStats


class CompactCommit(BaseModel):
    status: Literal["done", "failed", "running", "pending", "skipped"]
    reason: str | None = Field(default=None, description="why the commit was skipped")
    archive_seq: int | None


class CompactRead(ContextRead):
    commit: CompactCommit
