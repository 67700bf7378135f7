"""Long-term memories and their audit trail.

A memory is one durable fact about a user, with the archive and message seqs it came from, its
embedding (and the embedder that made it) and a generated full-text vector. ``memory_events`` is
append-only and keeps no content of an erased memory, so it refers to memories by id only.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pgvector.sqlalchemy import VECTOR
from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Computed,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    String,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, TSVECTOR, UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models.types import CreatedAt


class Memory(Base):
    __tablename__ = "memories"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id", "archive_seq"],
            ["archives.tenant_id", "archives.agent_session_id", "archives.archive_seq"],
            ondelete="CASCADE",
        ),
        CheckConstraint(
            "category IN ('profile', 'preference', 'entity', 'event', 'lesson')",
            name="category",
        ),
        CheckConstraint("confidence >= 0 AND confidence <= 1", name="confidence"),
        # Deduplication and search scope: (tenant, user, category).
        Index("ix_memories_tenant_id_user_id_category", "tenant_id", "user_id", "category"),
        Index("ix_memories_tenant_id_created_at", "tenant_id", "created_at", "memory_id"),
        Index(
            "ix_memories_tenant_id_agent_session_id", "tenant_id", "agent_session_id", "archive_seq"
        ),
        Index(
            "ix_memories_embedding",
            "embedding",
            postgresql_using="hnsw",
            postgresql_ops={"embedding": "vector_cosine_ops"},
        ),
        Index("ix_memories_content_tsv", "content_tsv", postgresql_using="gin"),
        # Exact vector search reads current memories from here, not from the table (the
        # revision vector_scope; absent when the vector has more than 512 dimensions).
        Index(
            "ix_memories_vector_scope",
            "tenant_id",
            "category",
            "user_id",
            postgresql_include=[
                "embedding",
                "embedding_model",
                "expires_at",
                "updated_at",
                "memory_id",
            ],
            postgresql_where=text(
                "superseded_by IS NULL AND "
                "COALESCE(octet_length(user_id), 0) + octet_length(embedding_model) <= 320"
            ),
        ),
        Index(
            "ix_memories_long_scope",
            "tenant_id",
            "category",
            "user_id",
            postgresql_where=text(
                "COALESCE(octet_length(user_id), 0) + octet_length(embedding_model) > 320"
            ),
        ),
        Index(
            "ix_memories_tenant_id_expires_at",
            "tenant_id",
            "expires_at",
            postgresql_where=text("expires_at IS NOT NULL"),
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    memory_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()")
    )
    user_id: Mapped[str | None] = mapped_column(Text)
    agent_id: Mapped[str | None] = mapped_column(Text)
    category: Mapped[str] = mapped_column(String(16))
    slot: Mapped[str | None] = mapped_column(Text)
    slot_value: Mapped[str | None] = mapped_column(Text)
    content: Mapped[str] = mapped_column(Text)
    confidence: Mapped[float] = mapped_column(Float)
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    archive_seq: Mapped[int] = mapped_column(Integer)
    source_seqs: Mapped[list[int]] = mapped_column(
        ARRAY(BigInteger), server_default=text("'{}'::bigint[]")
    )
    # The dimension is the installation's (fixed by the revision from WORKMEM_EMBEDDING_DIM).
    embedding: Mapped[list[float] | None] = mapped_column(VECTOR())
    """NULL once the memory is redacted (with ``embedding_model`` ``[redacted]``)."""
    embedding_model: Mapped[str] = mapped_column(Text)
    superseded_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    created_at: Mapped[CreatedAt]
    updated_at: Mapped[CreatedAt]
    expires_at: Mapped[datetime | None]
    """From then on the memory is hidden; the worker then deletes it (NULL: never)."""
    content_tsv: Mapped[Any] = mapped_column(
        TSVECTOR, Computed("to_tsvector('english'::regconfig, content)", persisted=True)
    )


class MemoryEvent(Base):
    __tablename__ = "memory_events"
    __table_args__ = (
        CheckConstraint("event IN ('ADD', 'UPDATE', 'SUPERSEDE', 'DELETE')", name="event"),
        Index("ix_memory_events_tenant_id_memory_id", "tenant_id", "memory_id"),
        Index("ix_memory_events_tenant_id_related_memory_id", "tenant_id", "related_memory_id"),
        Index(
            "ix_memory_events_tenant_id_agent_session_id",
            "tenant_id",
            "agent_session_id",
            "archive_seq",
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.tenant_id", ondelete="CASCADE"), primary_key=True
    )
    event_id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    memory_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    related_memory_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    user_id: Mapped[str | None] = mapped_column(Text)
    event: Mapped[str] = mapped_column(String(16))
    old_content: Mapped[str | None] = mapped_column(Text)
    new_content: Mapped[str | None] = mapped_column(Text)
    agent_session_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    archive_seq: Mapped[int | None] = mapped_column(Integer)
    source_seqs: Mapped[list[int]] = mapped_column(
        ARRAY(BigInteger), server_default=text("'{}'::bigint[]")
    )
    actor: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    created_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class UserMemoryPolicy(Base):
    """A tenant admin's default memory policy for one user's agent sessions."""

    __tablename__ = "user_memory_policies"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.tenant_id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(Text, primary_key=True)
    policy: Mapped[dict[str, Any]]
    updated_by: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    """The API key that last set it."""
    updated_at: Mapped[CreatedAt]
