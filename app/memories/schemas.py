"""Response bodies of long-term memory: memories, search hits, events, and an archive's report.

Each ``…Read`` is built from a ``records`` value a service returned (``from_value``); field
names here are the API. Vectors are never part of an answer.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.memories.policy import MemoryPolicy, parse_policy
from app.memories.records import ProducedMemory, SearchHit, StoredEvent, StoredMemory

CategoryName = Literal["profile", "preference", "entity", "event", "lesson"]


class MemoryPolicyFields(BaseModel):
    """A memory policy: which memory the archives of an agent session may produce. A field left
    out (or null) is not set here and falls to the next layer: the agent session's own policy,
    then its user's, then everything on."""

    model_config = ConfigDict(extra="forbid")
    working_memory: bool | None = Field(
        default=None, strict=True, description="make the working memory at each archive"
    )
    long_term_extraction: bool | None = Field(
        default=None, strict=True, description="extract long-term memories at each archive"
    )
    memory_types: list[CategoryName] | None = Field(
        default=None,
        min_length=1,
        description="the only categories of long-term memory stored (not empty)",
    )

    def policy(self) -> MemoryPolicy:
        return parse_policy(self.model_dump(exclude_none=True))

    @classmethod
    def of(cls, stored: dict[str, Any]) -> MemoryPolicyFields:
        return cls.model_validate(parse_policy(stored).to_json())


class UserMemoryPolicyRead(BaseModel):
    user_id: str
    memory_policy: MemoryPolicyFields
    updated_by: uuid.UUID = Field(description="the API key that last set it")
    updated_at: datetime


class MemoryRead(BaseModel):
    id: uuid.UUID
    user_id: str | None
    agent_id: str | None
    category: CategoryName
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
        description="when it expires (its category's lifetime in the tenant's retention "
        "policy, from when it was last stated); null: never",
    )

    @classmethod
    def from_value(cls, memory: StoredMemory) -> MemoryRead:
        return cls(
            id=memory.memory_id,
            user_id=memory.user_id,
            agent_id=memory.agent_id,
            category=memory.category,
            slot=memory.slot,
            slot_value=memory.slot_value,
            content=memory.content,
            confidence=memory.confidence,
            agent_session_id=memory.agent_session_id,
            archive_seq=memory.archive_seq,
            source_seqs=list(memory.source_seqs),
            embedding_model=memory.embedding_model,
            superseded_by=memory.superseded_by,
            created_at=memory.created_at,
            updated_at=memory.updated_at,
            expires_at=memory.expires_at,
        )


class MemoryHitRead(MemoryRead):
    score: float = Field(description="cosine similarity of query and memory; what min_score cuts")
    vector_rank: int | None = Field(description="place among the vector candidates (1 = first)")
    text_rank: int | None = Field(description="place among the full-text candidates")
    fused: float = Field(description="reciprocal-rank-fusion score: the order of the results")

    @classmethod
    def from_hit(cls, hit: SearchHit) -> MemoryHitRead:
        return cls(
            **MemoryRead.from_value(hit.memory).model_dump(),
            score=hit.score,
            vector_rank=hit.vector_rank,
            text_rank=hit.text_rank,
            fused=hit.fused,
        )


class MemorySearchRead(BaseModel):
    items: list[MemoryHitRead]
    embedding_model: str = Field(description="only memories embedded by it were compared")
    min_score: float


class MemoryPage(BaseModel):
    items: list[MemoryRead]
    next_cursor: str | None


class MemoryEventRead(BaseModel):
    event_id: int
    memory_id: uuid.UUID
    related_memory_id: uuid.UUID | None = Field(
        description="for SUPERSEDE: the memory this one replaced"
    )
    event: Literal["ADD", "UPDATE", "SUPERSEDE", "DELETE"]
    old_content: str | None = Field(description="null once the memory was erased")
    new_content: str | None
    agent_session_id: uuid.UUID | None
    archive_seq: int | None = Field(description="the archive whose messages caused the change")
    source_seqs: list[int]
    actor: str
    details: dict[str, Any]
    created_at: datetime

    @classmethod
    def from_value(cls, event: StoredEvent) -> MemoryEventRead:
        return cls(
            event_id=event.event_id,
            memory_id=event.memory_id,
            related_memory_id=event.related_memory_id,
            event=event.event,
            old_content=event.old_content,
            new_content=event.new_content,
            agent_session_id=event.agent_session_id,
            archive_seq=event.archive_seq,
            source_seqs=list(event.source_seqs),
            actor=event.actor,
            details=dict(event.details),
            created_at=event.created_at,
        )


class MemoryEventPage(BaseModel):
    items: list[MemoryEventRead]


class ProducedMemoryRead(BaseModel):
    """A change an archive made to long-term memory, and the memory as it is now."""

    event: Literal["ADD", "UPDATE", "SUPERSEDE"]
    memory_id: uuid.UUID
    source_seqs: list[int]
    memory: MemoryRead | None = Field(description="null when the memory was erased since")

    @classmethod
    def from_value(cls, produced: ProducedMemory) -> ProducedMemoryRead:
        return cls(
            event=produced.event,
            memory_id=produced.memory_id,
            source_seqs=list(produced.source_seqs),
            memory=None if produced.memory is None else MemoryRead.from_value(produced.memory),
        )


class MemoryFailureRead(BaseModel):
    stage: Literal["extract", "embed", "store"]
    error: str


class MemoryUsageRead(BaseModel):
    calls: int
    prompt_tokens: int
    completion_tokens: int


class MemoryReportRead(BaseModel):
    """What long-term memory extraction did for one archive. All counts 0 with ``failed`` null:
    it ran and found nothing worth keeping; ``failed`` set: it did not complete."""

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
