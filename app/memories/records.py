"""The values of long-term memory: categories, candidates, changes, reports, stored rows.

Owns the vocabulary (categories, event kinds, skip reasons and failure stages are stable strings:
renaming one is an API change) and the plain data passed between extraction, the write path and
the API. Pure data; never loads, stores, extracts or embeds anything.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class Category(StrEnum):
    PROFILE = "profile"
    """Who the user is: name, age, home, work, family situation, identity."""
    PREFERENCE = "preference"
    """What the user likes, dislikes, prefers or counts as a favourite."""
    ENTITY = "entity"
    """A named person, pet or thing in the user's life and how it relates to them."""
    EVENT = "event"
    """Something the user did or that happened to them, usually with a time."""
    LESSON = "lesson"
    """An error and its fix, a user's correction, or something the user says they learned."""


class EventKind(StrEnum):
    ADD = "ADD"
    UPDATE = "UPDATE"
    """A near-duplicate (or the same slot and value) restated: the row takes the new wording."""
    SUPERSEDE = "SUPERSEDE"
    """A preference or profile value contradicted: a new row, the old one kept and marked."""
    DELETE = "DELETE"
    """Erasure: the row is removed and the events of the memory keep no content."""


class SkipReason(StrEnum):
    CHIT_CHAT = "chit_chat"
    """Greetings, thanks, compliments and other small talk."""
    QUESTION = "question"
    """The message only asked things; a question states no fact about the user."""
    NO_DURABLE_FACT = "no_durable_fact"
    """A statement, but none of it is a profile, preference, entity, event or lesson."""
    LOW_CONFIDENCE = "low_confidence"
    """Hedged or hypothetical ("maybe", "I'd love to"): below the confidence threshold."""
    TOO_SHORT = "too_short"
    """Fewer content words than a memory needs to be findable and meaningful."""
    INVALID_ITEM = "invalid_item"
    """A model-proposed memory that does not match the ``record_memories`` schema."""
    UNSOURCED = "unsourced"
    """A model-proposed memory citing no message of the archive."""
    NOT_ALLOWED = "not_allowed"
    """A memory of a category the agent session's memory policy does not allow."""


class FailureStage(StrEnum):
    EXTRACT = "extract"
    EMBED = "embed"
    STORE = "store"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory proposed from an archive, before deduplication.

    ``slot`` names the attribute a preference or profile memory gives a value of
    (``likes:hike``, ``lives in``); ``slot_value`` is that value. Two current memories of a user
    with the same slot and different values contradict each other.
    """

    category: Category
    content: str
    confidence: float
    source_seqs: tuple[int, ...]
    slot: str | None = None
    slot_value: str | None = None
    rule: str = ""


@dataclass(frozen=True, slots=True)
class Extraction:
    """What an extractor proposed for one archive, and how many messages or items it skipped."""

    candidates: tuple[Candidate, ...]
    skipped: Mapping[str, int]
    extractor: str


@dataclass(frozen=True, slots=True)
class Failure:
    stage: FailureStage
    error: str


@dataclass(frozen=True, slots=True)
class MemoryReport:
    """What extraction did for one archive, stored as ``archives.memories``.

    A report with every count 0 and ``failed`` null is an extraction that ran and found nothing;
    ``failed`` says an extraction that did not complete, and at which stage.
    """

    extractor: str
    added: int = 0
    updated: int = 0
    superseded: int = 0
    skipped: Mapping[str, int] = field(default_factory=dict)
    failed: Failure | None = None
    calls: int = 0
    """Model calls made by the model-backed extractor (0 for the rules)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_version: str | None = None
    """The version of the ``record_memories`` prompt, when the model extracted."""

    def as_json(self) -> dict[str, Any]:
        return {
            "extractor": self.extractor,
            "added": self.added,
            "updated": self.updated,
            "superseded": self.superseded,
            "skipped": dict(sorted(self.skipped.items())),
            "failed": None
            if self.failed is None
            else {"stage": self.failed.stage.value, "error": self.failed.error},
            "usage": {
                "calls": self.calls,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
            },
            "prompt_version": self.prompt_version,
        }


@dataclass(frozen=True, slots=True)
class Source:
    """Where an archive's memories come from: its agent session's owner, and the archive."""

    agent_session_id: uuid.UUID
    archive_seq: int
    user_id: str | None
    agent_id: str | None


@dataclass(frozen=True, slots=True)
class StoredMemory:
    """One row of ``memories`` as the service reads it (never with its vector)."""

    memory_id: uuid.UUID
    user_id: str | None
    agent_id: str | None
    category: str
    slot: str | None
    slot_value: str | None
    content: str
    confidence: float
    agent_session_id: uuid.UUID
    archive_seq: int
    source_seqs: tuple[int, ...]
    embedding_model: str
    superseded_by: uuid.UUID | None
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A search result: ``score`` is the cosine similarity of query and memory (what
    ``min_score`` is compared with); the ranks say where each retriever placed it (1 = first,
    ``None`` = not among its candidates); ``fused`` is the reciprocal-rank-fusion score that
    orders the results."""

    memory: StoredMemory
    score: float
    vector_rank: int | None
    text_rank: int | None
    fused: float


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One row of ``memory_events``; contents are ``None`` once the memory was erased."""

    event_id: int
    memory_id: uuid.UUID
    related_memory_id: uuid.UUID | None
    event: str
    old_content: str | None
    new_content: str | None
    agent_session_id: uuid.UUID | None
    archive_seq: int | None
    source_seqs: tuple[int, ...]
    actor: str
    details: Mapping[str, Any]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ProducedMemory:
    """A memory change an archive made, with the memory as it is now (``None`` if erased)."""

    event: str
    memory_id: uuid.UUID
    source_seqs: tuple[int, ...]
    memory: StoredMemory | None
