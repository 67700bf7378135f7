"""Response bodies of the context ledger (``/v1/sessions/{id}/contexts``).

Leaves: the presenter beside the endpoints maps ledger rows to them. A recorded context names
what it was made of by id, seq and hash; the texts are read from the rows it names.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field


class SectionVersionRef(BaseModel):
    section: str | None = Field(description="null for a legacy free-text working memory")
    archive_seq: int
    content_sha256: str


class RecordedSummary(BaseModel):
    archive_seq: int = Field(description="the done archive whose working memory was the summary")
    covered_end_seq: int
    layer: int = Field(description="the room the summary was reduced to fit")
    sections: list[SectionVersionRef] = Field(description="each section version it was made of")


class RecordedPins(BaseModel):
    pin_ids: list[uuid.UUID] = Field(description="the pins in force, oldest first")
    sent: int = Field(description="how many of them (the first) were sent")


class RecordedMemory(BaseModel):
    memory_id: uuid.UUID
    score: float
    content_sha256: str = Field(description="the content as it was sent (memories are restated)")
    updated_at: datetime = Field(description="when it had last been stated, as it was sent")


class RecordedRun(BaseModel):
    start_seq: int | None
    end_seq: int | None
    ranges: list[list[int]] = Field(description="the seqs sent, as inclusive [start, end] runs")


class Unavailable(BaseModel):
    part: Literal["summary", "memory", "pin", "message"]
    id: str = Field(description="the section name, memory id, pin id or message seq")
    reason: Literal["erased", "redacted", "changed"]


class RenderedContext(BaseModel):
    messages: list[dict[str, Any]]
    system_prompt_addition: str
    messages_sha256: str
    matches: bool = Field(description="the rebuilt messages hash to the recorded sha256")
    system_prompt_addition_matches: bool
    unavailable: list[Unavailable] = Field(
        description="what the context used that was since erased, redacted or changed"
    )


class ContextRecordRead(BaseModel):
    context_id: uuid.UUID
    agent_session_id: uuid.UUID
    source: Literal["context", "compact", "openviking"]
    recorded_by: uuid.UUID = Field(description="the API key that asked for the context")
    created_at: datetime
    summary: RecordedSummary | None
    pins: RecordedPins
    memories: list[RecordedMemory] = Field(description="the recalled memories sent, in order")
    tail: RecordedRun = Field(description="the messages the summary did not cover that were sent")
    filled: RecordedRun = Field(description="the covered messages fill sent")
    cleared_seqs: list[int]
    retracted_seqs: list[int] = Field(description="retracted messages left out")
    redacted_seqs: list[int] = Field(description="messages sent already redacted")
    options: dict[str, Any]
    tokens: dict[str, Any]
    hint: dict[str, Any] = Field(description="how system_prompt_addition was written")
    parts_sha256: dict[str, str | None]
    message_count: int
    messages_sha256: str = Field(
        description="sha256 of the messages as UTF-8 JSON, keys sorted, no spaces"
    )
    render: RenderedContext | None = Field(
        default=None, description="the messages rebuilt from the rows named (render=true)"
    )


class ContextRecordPage(BaseModel):
    items: list[ContextRecordRead] = Field(description="newest first")
    next_cursor: str | None
