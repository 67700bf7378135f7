"""Request and response bodies for commits, archives and working memory.

Leaves: built from domain values (``from_value``, ``from_recorded``) or, for what a service
returns as ORM rows, by ``presenter`` beside the endpoints; they import no service, repository,
database or ORM module (an import contract holds it).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.archives.retention import TurnRetention
from app.archives.status import ArchiveStatus
from app.archives.working_memory import RecordedDecision, WorkingMemory
from app.memories.records import ProducedMemory
from app.memories.schemas import MemoryReportRead, ProducedMemoryRead
from app.sessions.schemas import MessageRead

DEFAULT_TURNS = 3
DEFAULT_TOKEN_BUDGET = 12_000
TURN_FIELDS = ("keep_recent_turn_count", "retained_message_token_budget", "min_raw_tail_steps")


class TurnRetentionFields(BaseModel):
    """Turn-aware retention of a commit: with ``retention_mode: "turn_budget"`` the kept tail is
    the newest turns within a token budget, never splitting a tool group (docs/api.md)."""

    # Strict: "5" or true is a client's mistake to report, not a number to guess.
    retention_mode: Literal["turn_budget"] | None = Field(
        default=None, description="turn_budget: keep whole recent turns within a token budget"
    )
    keep_recent_turn_count: int | None = Field(
        default=None,
        ge=0,
        le=10_000,
        strict=True,
        description="newest logical user turns kept raw (default 3; 0 archives all)",
    )
    retained_message_token_budget: int | None = Field(
        default=None,
        ge=1,
        le=10_000_000,
        strict=True,
        description="tokens the kept turns may hold: oldest whole turns go first, then the "
        "oldest steps of the newest turn (default 12000)",
    )
    min_raw_tail_steps: int | None = Field(
        default=None,
        ge=0,
        le=10_000,
        strict=True,
        description="newest steps of a turn over the budget kept whatever the budget (default "
        "1; 0 keeps one as well)",
    )

    @model_validator(mode="after")
    def _turn_fields_need_the_mode(self) -> TurnRetentionFields:
        given = [name for name in TURN_FIELDS if getattr(self, name) is not None]
        if self.retention_mode is None and given:
            raise ValueError(f'{", ".join(given)} requires retention_mode "turn_budget"')
        return self

    def turn_retention(self) -> TurnRetention | None:
        if self.retention_mode is None:
            return None
        sent = self.model_fields_set
        keep = getattr(self, "keep_recent_count", None) if "keep_recent_count" in sent else None
        return TurnRetention(
            turns=DEFAULT_TURNS
            if self.keep_recent_turn_count is None
            else self.keep_recent_turn_count,
            token_budget=(
                DEFAULT_TOKEN_BUDGET
                if self.retained_message_token_budget is None
                else self.retained_message_token_budget
            ),
            min_steps=1 if self.min_raw_tail_steps is None else self.min_raw_tail_steps,
            remember_keep=keep,
        )


class CommitCreate(TurnRetentionFields):
    model_config = ConfigDict(extra="forbid")
    keep_recent_count: int | None = Field(default=None, ge=0, le=10_000, strict=True)
    wait: bool = Field(default=False, strict=True)
    wait_timeout_s: float | None = Field(default=None, gt=0, le=600, strict=True)


class RestoreCreate(BaseModel):
    """``POST /v1/sessions/{id}/working-memory:restore``: which version to make current again."""

    model_config = ConfigDict(extra="forbid")
    archive_seq: int = Field(
        ge=1,
        le=2**31 - 1,
        strict=True,
        description="the done archive whose working memory becomes current again",
    )


class ForkCreate(BaseModel):
    """``POST /v1/sessions/{id}:fork``: where to fork, exactly one of the two."""

    model_config = ConfigDict(extra="forbid")
    at_archive: int | None = Field(
        default=None,
        ge=1,
        le=2**31 - 1,
        strict=True,
        description="fork at the end of this done archive: its messages and working memory",
    )
    at_seq: int | None = Field(
        default=None,
        ge=1,
        le=2**63 - 1,
        strict=True,
        description="fork after this message: the newest done archive ending at or before it "
        "gives the working memory, the messages after that archive are live in the fork",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> ForkCreate:
        if (self.at_archive is None) == (self.at_seq is None):
            raise ValueError("give exactly one of at_archive and at_seq")
        return self


class DecisionRead(BaseModel):
    section: str
    requested: str | None
    applied: str
    guard: str | None
    reason: str
    details: dict[str, Any]

    @classmethod
    def from_recorded(cls, decision: RecordedDecision) -> DecisionRead:
        return cls(
            section=decision.section.value,
            requested=decision.requested,
            applied=decision.applied,
            guard=decision.guard,
            reason=decision.reason,
            details=dict(decision.details),
        )


class ItemSourceRead(BaseModel):
    item: str = Field(description="the item's text, as in the section body")
    seqs: list[int] = Field(description="the messages it came from (read them by seq)")
    evidence: list[int] = Field(
        default_factory=list,
        description="Task & Goals constraints: the user messages among seqs that state it",
    )
    authority: list[str] = Field(
        default_factory=list,
        description="who its sources are: user, system, pin, assistant, tool (a constraint or "
        "goal from assistant or tool messages only is not an instruction)",
    )


def sources_read(value: WorkingMemory) -> dict[str, list[ItemSourceRead]]:
    return {
        section.value: [
            ItemSourceRead(
                item=entry.item,
                seqs=list(entry.seqs),
                evidence=list(entry.evidence),
                authority=list(entry.authority),
            )
            for entry in entries
        ]
        for section, entries in value.sources.items()
    }


class ArchiveRead(BaseModel):
    archive_seq: int
    start_seq: int
    end_seq: int
    status: ArchiveStatus
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
    memories: MemoryReportRead | None = Field(
        description="what long-term memory extraction did; null before the archive is done, "
        "or when extraction is off"
    )
    messages_purged_at: datetime | None = Field(
        default=None,
        description="when the tenant's retention policy purged the archive's raw messages "
        "(its working memory and overview stay); null while they are kept",
    )
    messages_purged_count: int | None = Field(
        default=None, description="how many raw messages that purge deleted"
    )


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
    sources: dict[str, list[ItemSourceRead]] = Field(
        default_factory=dict,
        description="each section's items, in order, with the message seqs each came from",
    )
    produced_memories: list[ProducedMemoryRead] = Field(
        default_factory=list,
        description="the long-term memory changes of the archive that produced this WM",
    )

    @classmethod
    def from_value(
        cls, working_memory: WorkingMemory, memories: Sequence[ProducedMemory] = ()
    ) -> WorkingMemoryRead:
        sections = (
            {}
            if working_memory.is_legacy
            else {section.value: body for section, body in working_memory.sections.items()}
        )
        return cls(
            archive_seq=working_memory.archive_seq,
            covered_start_seq=working_memory.covered_start_seq,
            covered_end_seq=working_memory.covered_end_seq,
            markdown=working_memory.markdown,
            sections=sections,
            decisions=[DecisionRead.from_recorded(d) for d in working_memory.decisions],
            generator=working_memory.generator,
            tokens=working_memory.tokens,
            is_legacy=working_memory.is_legacy,
            sources=sources_read(working_memory),
            produced_memories=[ProducedMemoryRead.from_value(memory) for memory in memories],
        )


class ArchiveActionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="why, kept with the action in the archive's audit trail",
    )


class ArchiveActionRead(BaseModel):
    action: Literal["retry", "clear"]
    actor: Literal["api_key", "operator"] = Field(
        description="an API key, or the operator from the command line"
    )
    api_key_id: uuid.UUID | None = Field(description="the key that asked; null for the operator")
    reason: str | None
    created_at: datetime


class ArchiveExpanded(ArchiveRead):
    overview: str | None
    legacy_overview: str | None
    decisions: list[DecisionRead]
    messages: list[MessageRead]
    messages_note: str | None = Field(
        default=None,
        description="why ``messages`` is empty when the raw messages were purged by retention; "
        "null while they are kept",
    )
    next_after_seq: int | None
    produced_memories: list[ProducedMemoryRead] = Field(
        description="the long-term memory changes this archive made (provenance: memories → "
        "archive via their events, archive → memories here)"
    )
    actions: list[ArchiveActionRead] = Field(
        default_factory=list,
        description="every retry and clear of this archive, oldest first: who, when and why",
    )


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
    sources: list[ItemSourceRead] = Field(
        description="the version's items, in order, with the message seqs each came from"
    )
    generator: str
    model: str | None
    prompt_version: str | None
    created_at: datetime


class SectionHistoryPage(BaseModel):
    items: list[SectionVersionRead]
    next_after_archive_seq: int | None = Field(
        description="with next_after_position, where the next page starts; null at the end"
    )
    next_after_position: int | None = Field(
        description="pass as after_position (with after_archive_seq) to read the next page"
    )
