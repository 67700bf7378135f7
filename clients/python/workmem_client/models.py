"""The workmem API's answers as pydantic models. GENERATED from the server's OpenAPI
document by ``clients/python/generate_models.py``: do not edit (a test regenerates this file and
compares).

Fields the server adds later are ignored, so an older client reads a newer server's answers.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, Field

CategoryName: TypeAlias = Literal["profile", "preference", "entity", "event", "lesson"]
EventType: TypeAlias = Literal["archive.done", "archive.failed", "memory.changed"]


class ArchiveBrief(BaseModel):
    archive_seq: int
    start_seq: int
    end_seq: int
    status: str


class LineageRead(BaseModel):
    """Where a fork left its parent: it shares the parent's history up to there."""

    parent_session_id: uuid.UUID
    archive_seq: int = Field(
        description="the fork's working memory was the parent's version of this archive (0: none); its own archives are numbered after it"
    )
    seq: int = Field(description="the parent's last message in the fork's history")


class MemoryPolicyFields(BaseModel):
    """A memory policy: which memory the archives of an agent session may produce. A field left out (or null) is not set here and falls to the next layer: the agent session's own policy, then its user's, then everything on."""

    working_memory: bool | None = Field(
        default=None, description="make the working memory at each archive"
    )
    long_term_extraction: bool | None = Field(
        default=None, description="extract long-term memories at each archive"
    )
    memory_types: list[Literal["profile", "preference", "entity", "event", "lesson"]] | None = (
        Field(
            default=None, description="the only categories of long-term memory stored (not empty)"
        )
    )


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
    record_contexts: bool = Field(
        description="record every context of this agent session in the context ledger unless the request says record=false (default false: only a request with record=true is recorded)"
    )
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


class MessageRead(BaseModel):
    seq: int
    role: Literal["system", "user", "assistant", "tool"]
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
        default=None, description="when its content was replaced by [redacted]; null if it was not"
    )


class AppendResult(BaseModel):
    message: MessageRead
    pending_tokens: int
    live_message_count: int


class ArchiveActionRead(BaseModel):
    action: Literal["retry", "clear"]
    actor: Literal["api_key", "operator"] = Field(
        description="an API key, or the operator from the command line"
    )
    api_key_id: uuid.UUID | None = Field(description="the key that asked; null for the operator")
    reason: str | None
    created_at: datetime


class ArchiveStatus(StrEnum):
    """An archive is also its job: pending → running → done | failed (DESIGN 6.2); an operator may set a failed one aside as ``cleared``: never run again, its messages left to the next archive."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CLEARED = "cleared"


class DecisionRead(BaseModel):
    section: str
    requested: str | None
    applied: str
    guard: str | None
    reason: str
    details: dict[str, Any]


class MemoryFailureRead(BaseModel):
    stage: Literal["extract", "embed", "store"]
    error: str


class MemoryUsageRead(BaseModel):
    calls: int
    prompt_tokens: int
    completion_tokens: int


class MemoryReportRead(BaseModel):
    """What long-term memory extraction did for one archive. All counts 0 with ``failed`` null: it ran and found nothing worth keeping; ``failed`` set: it did not complete."""

    extractor: str = Field(description="rules, model, or rules_fallback (the model failed)")
    added: int
    updated: int
    superseded: int
    skipped: dict[str, int] = Field(description="messages or proposals not kept, by reason")
    failed: MemoryFailureRead | None
    usage: MemoryUsageRead | None = None
    prompt_version: str | None = Field(
        default=None, description="the record_memories prompt's version, when the model ran"
    )


class MemoryRead(BaseModel):
    id: uuid.UUID
    user_id: str | None
    agent_id: str | None
    category: Literal["profile", "preference", "entity", "event", "lesson"]
    slot: str | None = Field(description="the attribute a preference or profile fact gives a value")
    slot_value: str | None
    content: str
    confidence: float
    agent_session_id: uuid.UUID = Field(description="the agent session it came from")
    archive_seq: int = Field(description="the archive whose messages state it")
    source_seqs: list[int] = Field(description="the messages (seqs) that state it")
    embedding_model: str = Field(description="the embedder of its vector")
    superseded_by: uuid.UUID | None = Field(
        description="the memory that contradicted and replaced it; null while it is current"
    )
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = Field(
        default=None,
        description="when it expires (its category's lifetime in the tenant's retention policy, from when it was last stated); null: never",
    )


class ProducedMemoryRead(BaseModel):
    """A change an archive made to long-term memory, and the memory as it is now."""

    event: Literal["ADD", "UPDATE", "SUPERSEDE"]
    memory_id: uuid.UUID
    source_seqs: list[int]
    memory: MemoryRead | None = Field(description="null when the memory was erased since")


class ArchiveExpanded(BaseModel):
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
        description="what long-term memory extraction did; null before the archive is done, or when extraction is off"
    )
    messages_purged_at: datetime | None = Field(
        default=None,
        description="when the tenant's retention policy purged the archive's raw messages (its working memory and overview stay); null while they are kept",
    )
    messages_purged_count: int | None = Field(
        default=None, description="how many raw messages that purge deleted"
    )
    overview: str | None
    legacy_overview: str | None
    decisions: list[DecisionRead]
    messages: list[MessageRead]
    messages_note: str | None = Field(
        default=None,
        description="why ``messages`` is empty when the raw messages were purged by retention; null while they are kept",
    )
    next_after_seq: int | None
    produced_memories: list[ProducedMemoryRead] = Field(
        description="the long-term memory changes this archive made (provenance: memories → archive via their events, archive → memories here)"
    )
    actions: list[ArchiveActionRead] | None = Field(
        default=None,
        description="every retry and clear of this archive, oldest first: who, when and why",
    )


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
        description="what long-term memory extraction did; null before the archive is done, or when extraction is off"
    )
    messages_purged_at: datetime | None = Field(
        default=None,
        description="when the tenant's retention policy purged the archive's raw messages (its working memory and overview stay); null while they are kept",
    )
    messages_purged_count: int | None = Field(
        default=None, description="how many raw messages that purge deleted"
    )


class ArchivePage(BaseModel):
    items: list[ArchiveRead]
    next_before_seq: int | None


class BatchAppendResult(BaseModel):
    messages: list[MessageRead]
    pending_tokens: int
    live_message_count: int


class ItemSourceRead(BaseModel):
    item: str = Field(description="the item's text, as in the section body")
    seqs: list[int] = Field(description="the messages it came from (read them by seq)")
    evidence: list[int] | None = Field(
        default=None,
        description="Task & Goals constraints: the user messages among seqs that state it",
    )
    authority: list[str] | None = Field(
        default=None,
        description="who its sources are: user, system, pin, assistant, tool (a constraint or goal from assistant or tool messages only is not an instruction)",
    )


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
    sources: dict[str, list[ItemSourceRead]] | None = Field(
        default=None,
        description="each section's items, in order, with the message seqs each came from",
    )
    produced_memories: list[ProducedMemoryRead] | None = Field(
        default=None,
        description="the long-term memory changes of the archive that produced this WM",
    )


class CommitRead(BaseModel):
    status: Literal["accepted", "skipped", "done", "failed", "running"]
    reason: str | None = Field(default=None, description="why a commit was skipped")
    archive: ArchiveRead | None
    working_memory: WorkingMemoryRead | None
    pending_tokens: int
    live_message_count: int


class ArchiveIndexEntry(BaseModel):
    archive_seq: int
    start_seq: int
    end_seq: int
    status: ArchiveStatus
    abstract: str | None
    in_context: Literal["summary", "raw", "partial", "none"] = Field(
        description="summary: covered by the summary message; raw / partial / none: how many of its messages are in 'messages' raw"
    )


class CompactCommit(BaseModel):
    status: Literal["done", "failed", "running", "pending", "skipped"]
    reason: str | None = Field(default=None, description="why the commit was skipped")
    archive_seq: int | None


class ClearingStats(BaseModel):
    keep: int = Field(description="clear_tool_results: the newest tool results kept whole")
    excluded_tools: list[str] = Field(description="tools whose results are never cleared")
    cleared: int = Field(description="tool results sent as a placeholder")
    cleared_seqs: list[int]
    tokens_saved: int = Field(
        description="tokens the cleared results would have cost sent whole, less their placeholders"
    )


class DroppedMessage(BaseModel):
    seq: int
    reason: Literal[
        "orphan_tool_result", "unanswered_tool_calls", "awaiting_tool_results", "invalid_tool_calls"
    ]


class PinStats(BaseModel):
    in_force: int
    sent: list[uuid.UUID] = Field(description="the pins in the [Pinned] message, in order")
    left_out: int = Field(description="pins in force left out to fit the token budget")


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


class SeqRange(BaseModel):
    start_seq: int
    end_seq: int


class WmCutRead(BaseModel):
    kind: Literal["items", "section", "text"]
    section: str | None
    removed: int = Field(description="items (lines, for a legacy text) the cut took out")


class ContextStats(BaseModel):
    messages_unsummarised: int = Field(description="messages after the summary's coverage")
    messages_included: int
    included_seqs: list[int] = Field(
        description="the seqs of the unsummarised raw messages in 'messages', oldest first: they are its last entries"
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


class PreservedTail(BaseModel):
    archive_seq: int = Field(description="the newest archive, whose commit kept this tail raw")
    start_seq: int
    end_seq: int
    message_count: int
    tokens: int
    keep_recent_count: int | None
    in_context: int = Field(description="how many of the tail's messages are in 'messages'")


class CompactRead(BaseModel):
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
        description="the ledger row of this context when it was recorded (record=true): GET /v1/sessions/{id}/contexts/{context_id}",
    )
    commit: CompactCommit


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
        description="the ledger row of this context when it was recorded (record=true): GET /v1/sessions/{id}/contexts/{context_id}",
    )


class RecordedMemory(BaseModel):
    memory_id: uuid.UUID
    score: float
    content_sha256: str = Field(description="the content as it was sent (memories are restated)")
    updated_at: datetime = Field(description="when it had last been stated, as it was sent")


class RecordedPins(BaseModel):
    pin_ids: list[uuid.UUID] = Field(description="the pins in force, oldest first")
    sent: int = Field(description="how many of them (the first) were sent")


class RecordedRun(BaseModel):
    start_seq: int | None
    end_seq: int | None
    ranges: list[list[int]] = Field(description="the seqs sent, as inclusive [start, end] runs")


class SectionVersionRef(BaseModel):
    section: str | None = Field(description="null for a legacy free-text working memory")
    archive_seq: int
    content_sha256: str


class RecordedSummary(BaseModel):
    archive_seq: int = Field(description="the done archive whose working memory was the summary")
    covered_end_seq: int
    layer: int = Field(description="the room the summary was reduced to fit")
    sections: list[SectionVersionRef] = Field(description="each section version it was made of")


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


class DeliveryAttemptRead(BaseModel):
    attempt: int
    started_at: datetime
    duration_ms: int
    status_code: int | None = Field(description="the endpoint's answer; null when none came")
    error: str | None = Field(description="why the attempt failed; null when it succeeded")


class DeliveryRead(BaseModel):
    id: uuid.UUID
    webhook_id: uuid.UUID
    event_id: str = Field(description="the webhook-id header: the same for every endpoint")
    event_type: Literal["archive.done", "archive.failed", "memory.changed"]
    status: Literal["pending", "sending", "delivered", "failed"]
    attempts_made: int
    next_attempt_at: datetime | None = Field(description="when it is tried next; null once final")
    payload: dict[str, Any] = Field(description="the body sent, as JSON")
    created_at: datetime
    finished_at: datetime | None
    attempts: list[DeliveryAttemptRead]


class DeliveryPage(BaseModel):
    items: list[DeliveryRead]
    next_cursor: str | None


class ReceiptSignature(BaseModel):
    algorithm: str = Field(description='always "Ed25519"')
    key_id: str = Field(description="the signing key's id (GET /v1/receipts/public-key)")
    value: str = Field(description="the signature, base64, over the canonical receipt")


class ErasureReceipt(BaseModel):
    """What an erasure removed, signed. Every member but ``signature`` is signed, in canonical form (keys sorted, no whitespace, UTF-8): change any and verification fails."""

    format: str = Field(description='"workmem.erasure-receipt/1"')
    erasure_id: str
    tenant_id: str
    user_id_sha256: str = Field(
        description="SHA-256 (hex) of '<tenant_id>:<user_id>': the receipt names no one"
    )
    requested_by_api_key_id: str | None = Field(
        description="the id of the API key that asked (null: the operator's command line)"
    )
    started_at: str
    finished_at: str
    removed: dict[str, int] = Field(description="rows removed, per table")
    rows_removed: int
    signature: ReceiptSignature


class HistoryHitRead(BaseModel):
    seq: int
    role: str
    archive_seq: int | None = Field(
        description="the archive holding the message; null while it is live"
    )
    rank: float = Field(description="full-text rank (cover density); higher is better")
    snippet: str = Field(description="the message's own text around the match, on one line")
    created_at: datetime


class HistorySearchRead(BaseModel):
    query: str
    from_seq: int
    to_seq: int
    items: list[HistoryHitRead] = Field(description="best first")


class MemoryHitRead(BaseModel):
    id: uuid.UUID
    user_id: str | None
    agent_id: str | None
    category: Literal["profile", "preference", "entity", "event", "lesson"]
    slot: str | None = Field(description="the attribute a preference or profile fact gives a value")
    slot_value: str | None
    content: str
    confidence: float
    agent_session_id: uuid.UUID = Field(description="the agent session it came from")
    archive_seq: int = Field(description="the archive whose messages state it")
    source_seqs: list[int] = Field(description="the messages (seqs) that state it")
    embedding_model: str = Field(description="the embedder of its vector")
    superseded_by: uuid.UUID | None = Field(
        description="the memory that contradicted and replaced it; null while it is current"
    )
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = Field(
        default=None,
        description="when it expires (its category's lifetime in the tenant's retention policy, from when it was last stated); null: never",
    )
    score: float = Field(description="cosine similarity of query and memory; what min_score cuts")
    vector_rank: int | None = Field(description="place among the vector candidates (1 = first)")
    text_rank: int | None = Field(description="place among the full-text candidates")
    fused: float = Field(description="reciprocal-rank-fusion score: the order of the results")


class MemorySearchRead(BaseModel):
    items: list[MemoryHitRead]
    embedding_model: str = Field(description="only memories embedded by it were compared")
    min_score: float


class MessagePage(BaseModel):
    items: list[MessageRead]
    next_after_seq: int | None = Field(
        description="pass as after_seq to read the next page; null at the end"
    )


class ModelUsageDay(BaseModel):
    day: str = Field(description="the UTC day")
    model: str
    calls: int = Field(description="calls made or refused, whatever their outcome")
    errors: int = Field(description="calls that failed")
    refused: int = Field(description="calls not made because the model's circuit was open")
    input_tokens: int = Field(description="tokens in, as the provider reported them")
    output_tokens: int = Field(description="tokens out, as the provider reported them")
    mean_latency_ms: int


class ModelUsageTotals(BaseModel):
    calls: int
    errors: int
    refused: int
    input_tokens: int
    output_tokens: int


class ModelUsageReport(BaseModel):
    from_: str = Field(description="the first UTC day counted", alias="from")
    to: str = Field(description="the last UTC day counted")
    items: list[ModelUsageDay] = Field(description="one per day and model with calls, by day")
    totals: ModelUsageTotals


class PinRead(BaseModel):
    pin_id: uuid.UUID
    text: str
    message_seq: int | None
    section: str | None
    token_count: int
    pinned_by: uuid.UUID
    created_at: datetime
    unpinned_at: datetime | None
    unpinned_by: uuid.UUID | None


class PinList(BaseModel):
    items: list[PinRead] = Field(description="oldest first")
    tokens: int = Field(description="tokens of the pins now in force")
    max_tokens: int = Field(description="the most the agent session's pins may hold in all")


class ReceiptPublicKey(BaseModel):
    algorithm: str = Field(description='always "Ed25519"')
    key_id: str
    public_key: str = Field(description="the raw 32-byte public key, base64")
    pem: str = Field(description="the same key as a PEM SubjectPublicKeyInfo block")


class RedactedCounts(BaseModel):
    working_memory_items: int = Field(description="items of section versions now [redacted]")
    archives: int = Field(description="archives whose overview was written again")
    memories: int = Field(description="long-term memories now [redacted]")
    memory_events: int = Field(description="memory history events whose content was redacted")
    pins: int = Field(description="pins of the message now [redacted]")
    idempotency_answers: int = Field(description="stored answers of the append now redacted")


class RedactionRead(BaseModel):
    seq: int
    role: str
    archived: bool = Field(description="whether the message was archived when redacted")
    redacted_at: datetime
    redacted_by: uuid.UUID = Field(description="the id of the API key that redacted it")
    reason: str | None
    already_redacted: bool = Field(
        description="true when it had been redacted before: nothing changed this time"
    )
    redacted: RedactedCounts


class RetentionPolicyRead(BaseModel):
    archive_messages_days: int | None
    idle_session_days: int | None
    memory_days: dict[str, int]
    updated_at: datetime | None = Field(description="null while the tenant never set a policy")
    updated_by: uuid.UUID | None = Field(
        description="the API key that set it; null when the operator's command did"
    )


class RetractionRead(BaseModel):
    retracted: MessageRead | None = Field(
        description="the retracted message as stored; null when no live message was left"
    )
    retracted_at: datetime | None


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


class UserMemoryPolicyRead(BaseModel):
    user_id: str
    memory_policy: MemoryPolicyFields
    updated_by: uuid.UUID = Field(description="the API key that last set it")
    updated_at: datetime


class WebhookCreated(BaseModel):
    id: uuid.UUID
    url: str
    events: list[Literal["archive.done", "archive.failed", "memory.changed"]]
    description: str | None
    created_at: datetime
    secret: str = Field(
        description="the signing secret (whsec_…, Standard Webhooks); shown once, keep it"
    )


class WebhookRead(BaseModel):
    id: uuid.UUID
    url: str
    events: list[Literal["archive.done", "archive.failed", "memory.changed"]]
    description: str | None
    created_at: datetime


class WebhookPage(BaseModel):
    items: list[WebhookRead]


__all__ = [
    "AgentSessionPage",
    "AgentSessionRead",
    "AppendResult",
    "ArchiveActionRead",
    "ArchiveBrief",
    "ArchiveExpanded",
    "ArchiveIndexEntry",
    "ArchivePage",
    "ArchiveRead",
    "ArchiveStatus",
    "BatchAppendResult",
    "CategoryName",
    "ClearingStats",
    "CommitRead",
    "CompactCommit",
    "CompactRead",
    "ContextRead",
    "ContextRecordPage",
    "ContextRecordRead",
    "ContextStats",
    "ContextTokens",
    "ContextWorkingMemory",
    "DecisionRead",
    "DeliveryAttemptRead",
    "DeliveryPage",
    "DeliveryRead",
    "DroppedMessage",
    "ErasureReceipt",
    "EventType",
    "HistoryHitRead",
    "HistorySearchRead",
    "ItemSourceRead",
    "LineageRead",
    "MemoryFailureRead",
    "MemoryHitRead",
    "MemoryPolicyFields",
    "MemoryRead",
    "MemoryReportRead",
    "MemorySearchRead",
    "MemoryUsageRead",
    "MessagePage",
    "MessageRead",
    "ModelUsageDay",
    "ModelUsageReport",
    "ModelUsageTotals",
    "PinList",
    "PinRead",
    "PinStats",
    "PreservedTail",
    "ProducedMemoryRead",
    "RecallStats",
    "RecalledMemory",
    "ReceiptPublicKey",
    "ReceiptSignature",
    "RecordedMemory",
    "RecordedPins",
    "RecordedRun",
    "RecordedSummary",
    "RedactedCounts",
    "RedactionRead",
    "RenderedContext",
    "RetentionPolicyRead",
    "RetractionRead",
    "SectionHistoryPage",
    "SectionVersionRead",
    "SectionVersionRef",
    "SeqRange",
    "Unavailable",
    "UserMemoryPolicyRead",
    "WebhookCreated",
    "WebhookPage",
    "WebhookRead",
    "WmCutRead",
    "WorkingMemoryRead",
]
