"""Request and response bodies for commits, archives and working memory."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.sessions.schemas import MessageRead


class CommitCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keep_recent_count: int | None = Field(default=None, ge=0, le=10_000)
    wait: bool = False
    wait_timeout_s: float | None = Field(default=None, gt=0, le=600)


class DecisionRead(BaseModel):
    section: str
    requested: str | None
    applied: str
    guard: str | None
    reason: str
    details: dict[str, Any]


class ArchiveRead(BaseModel):
    archive_seq: int
    start_seq: int
    end_seq: int
    status: Literal["pending", "running", "done", "failed"]
    attempt: int
    keep_recent_count: int | None
    first_turn: int | None
    last_turn: int | None
    tail_start_seq: int | None
    tail_end_seq: int | None
    tail_message_count: int
    tail_tokens: int
    archived_tokens: int
    abstract: str | None
    generator: str | None
    generator_note: str | None
    model: str | None
    prompt_version: str | None
    usage: dict[str, Any] | None
    covers_failed_archives: list[int]
    is_legacy: bool
    upgraded_from_legacy: bool
    error_stage: str | None
    last_error: str | None
    wm_tokens: int | None
    created_at: datetime
    finished_at: datetime | None


class ArchivePage(BaseModel):
    items: list[ArchiveRead]
    next_before_seq: int | None


class WorkingMemoryRead(BaseModel):
    archive_seq: int
    covered_start_seq: int
    covered_end_seq: int
    markdown: str
    sections: dict[str, str]
    decisions: list[DecisionRead]
    generator: str | None
    tokens: int
    is_legacy: bool = False


class ArchiveExpanded(ArchiveRead):
    overview: str | None
    legacy_overview: str | None
    decisions: list[DecisionRead]
    messages: list[MessageRead]
    next_after_seq: int | None


class CommitRead(BaseModel):
    status: Literal["accepted", "skipped", "done", "failed", "running"]
    reason: str | None = Field(default=None, description="why a commit was skipped")
    archive: ArchiveRead | None
    working_memory: WorkingMemoryRead | None
    pending_tokens: int
    live_message_count: int


class SectionVersionRead(BaseModel):
    archive_seq: int
    section: str
    position: int
    content: str
    content_sha256: str
    token_count: int
    item_count: int
    op_requested: str | None
    op_applied: str
    guard: str | None
    reason: str
    details: dict[str, Any]
    generator: str
    model: str | None
    prompt_version: str | None
    created_at: datetime


class SectionHistoryPage(BaseModel):
    items: list[SectionVersionRead]
    next_after_archive_seq: int | None
