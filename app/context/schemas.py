"""Response bodies of the assembled context and of compact (DESIGN 7).

Field names and reason strings here are the API; they never carry internal objects or SQL rows.
Leaves: ``presenter.context_read`` maps what ``ContextService`` decided to the answer.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from app.archives.schemas import ItemSourceRead, sources_read
from app.archives.status import ArchiveStatus
from app.archives.working_memory import WorkingMemory

InContext = Literal["summary", "raw", "partial", "none"]


class ContextWorkingMemory(BaseModel):
    archive_seq: int
    covered_start_seq: int
    covered_end_seq: int
    sections: dict[str, str] = Field(description="the full sections, before any reduction")
    tokens: int = Field(description="tokens of the full sections, from their stored counts")
    is_legacy: bool
    generator: str | None
    sources: dict[str, list[ItemSourceRead]] = Field(
        description="each section's items with the message seqs each came from"
    )

    @classmethod
    def from_value(cls, working_memory: WorkingMemory) -> ContextWorkingMemory:
        return cls(
            archive_seq=working_memory.archive_seq,
            covered_start_seq=working_memory.covered_start_seq,
            covered_end_seq=working_memory.covered_end_seq,
            sections={}
            if working_memory.is_legacy
            else {section.value: body for section, body in working_memory.sections.items()},
            tokens=working_memory.tokens,
            is_legacy=working_memory.is_legacy,
            generator=working_memory.generator,
            sources=sources_read(working_memory),
        )


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
    in_context: InContext = Field(
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
    memories: int = Field(default=0, description="the [Relevant Memories] message as sent")
    pinned: int = Field(default=0, description="the [Pinned] message as sent")
    messages: int = Field(
        description="the raw messages as sent (filled ones included), from their stored counts"
    )
    filled: int = Field(description="of 'messages', the covered messages sent by fill")
    total: int = Field(description="system_prompt_addition + wm + memories + pinned + messages")
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
    included_seqs: list[int] = Field(
        description="the seqs of the unsummarised raw messages in 'messages', oldest first: "
        "they are its last entries"
    )
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
    messages_filled: int = Field(
        description="covered messages sent after the summary (fill); not in messages_included"
    )
    filled_range: SeqRange | None = Field(
        description="the seq range of the filled messages (they end at the summary's coverage)"
    )
    recall: RecallStats | None = Field(
        default=None, description="what recall=<query> found and sent; null without recall"
    )
    pins: PinStats = Field(description="the agent session's pins in force and those sent")
    clearing: ClearingStats | None = Field(
        default=None, description="what clear_tool_results did; null without it"
    )


class PinStats(BaseModel):
    in_force: int
    sent: list[uuid.UUID] = Field(description="the pins in the [Pinned] message, in order")
    left_out: int = Field(description="pins in force left out to fit the token budget")


class ClearingStats(BaseModel):
    keep: int = Field(description="clear_tool_results: the newest tool results kept whole")
    excluded_tools: list[str] = Field(description="tools whose results are never cleared")
    cleared: int = Field(description="tool results sent as a placeholder")
    cleared_seqs: list[int]
    tokens_saved: int = Field(
        description="tokens the cleared results would have cost sent whole, less their placeholders"
    )


class RecalledMemory(BaseModel):
    id: uuid.UUID
    category: str
    score: float = Field(description="cosine similarity to the recall query")
    updated_at: datetime


class RecallStats(BaseModel):
    query: str
    min_score: float
    found: int = Field(description="memories above min_score the search returned (at most 5)")
    memories: list[RecalledMemory] = Field(description="those sent, in the order sent")
    left_out: int = Field(description="found but left out to fit the token budget")


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
    context_id: uuid.UUID | None = Field(
        default=None,
        description="the ledger row of this context when it was recorded (record=true): "
        "GET /v1/sessions/{id}/contexts/{context_id}",
    )


class CompactCommit(BaseModel):
    status: Literal["done", "failed", "running", "pending", "skipped"]
    reason: str | None = Field(default=None, description="why the commit was skipped")
    archive_seq: int | None


class CompactRead(ContextRead):
    commit: CompactCommit
