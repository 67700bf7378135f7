"""Archives and the working-memory section history.

An archive is ``[start_seq, end_seq]`` over the append-only messages table, and it is also the
job that produces the next working memory (``status`` pending → running → done | failed). Each
processed archive has seven ``wm_section_versions`` rows: the audit trail, in plain SQL.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Enum,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.archives.status import ArchiveStatus as ArchiveStatus
from app.db import Base
from app.models.types import CreatedAt
from app.wm.sections import SECTIONS

wm_section = Enum(*(section.value for section in SECTIONS), name="wm_section")
# Stored as text with a CHECK constraint (not a Postgres enum type): adding a status later is a
# constraint change, not an ALTER TYPE.
archive_status = Enum(
    ArchiveStatus,
    native_enum=False,
    create_constraint=False,
    length=16,
    values_callable=lambda statuses: [status.value for status in statuses],
)


class Archive(Base):
    __tablename__ = "archives"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            ondelete="CASCADE",
        ),
        # A restore archive covers no new message: its range is empty (end_seq = start_seq - 1).
        CheckConstraint("start_seq <= end_seq + 1", name="range"),
        CheckConstraint(
            "status IN ('pending', 'running', 'done', 'failed', 'cleared')", name="status"
        ),
        # The claim query scans only unfinished archives, oldest available first.
        Index(
            "ix_archives_unfinished",
            "available_at",
            postgresql_where=text("status IN ('pending', 'running')"),
        ),
        # The archive that holds a message (history search): the first ending at or after it.
        Index(
            "ix_archives_tenant_id_agent_session_id_end_seq",
            "tenant_id",
            "agent_session_id",
            "end_seq",
        ),
        # Retention: a tenant's oldest archives whose raw messages are still kept.
        Index(
            "ix_archives_tenant_id_created_at_unpurged",
            "tenant_id",
            "created_at",
            postgresql_where=text("messages_purged_at IS NULL"),
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    archive_seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    start_seq: Mapped[int] = mapped_column(BigInteger)
    end_seq: Mapped[int] = mapped_column(BigInteger)
    overview: Mapped[str | None] = mapped_column(Text)
    abstract: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[CreatedAt]

    status: Mapped[ArchiveStatus] = mapped_column(archive_status, server_default=text("'pending'"))
    attempt: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    available_at: Mapped[datetime] = mapped_column(server_default=text("now()"))
    lease_until: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    error_stage: Mapped[str | None] = mapped_column(String(32))
    generator: Mapped[str | None] = mapped_column(String(32))
    generator_note: Mapped[str | None] = mapped_column(Text)
    model: Mapped[str | None] = mapped_column(Text)
    prompt_version: Mapped[str | None] = mapped_column(String(32))
    usage: Mapped[dict[str, Any] | None]
    covers_failed_archives: Mapped[list[int]] = mapped_column(
        ARRAY(Integer), server_default=text("'{}'::integer[]")
    )
    legacy_overview: Mapped[str | None] = mapped_column(Text)
    is_legacy: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    upgraded_from_legacy: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    keep_recent_count: Mapped[int | None] = mapped_column(Integer)
    first_turn: Mapped[int | None] = mapped_column(Integer)
    last_turn: Mapped[int | None] = mapped_column(Integer)
    tail_start_seq: Mapped[int | None] = mapped_column(BigInteger)
    tail_end_seq: Mapped[int | None] = mapped_column(BigInteger)
    tail_message_count: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    tail_tokens: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    archived_tokens: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    wm_tokens: Mapped[int | None] = mapped_column(Integer)
    finished_at: Mapped[datetime | None]
    memories: Mapped[dict[str, Any] | None]
    """What long-term memory extraction did for this archive (``app.memories.records``)."""
    messages_purged_at: Mapped[datetime | None]
    """When retention deleted the archive's raw messages (NULL: they are kept)."""
    messages_purged_count: Mapped[int | None] = mapped_column(Integer)
    """How many raw messages that purge deleted."""


class WmSectionVersion(Base):
    __tablename__ = "wm_section_versions"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id", "archive_seq"],
            ["archives.tenant_id", "archives.agent_session_id", "archives.archive_seq"],
            ondelete="CASCADE",
        ),
        CheckConstraint("position BETWEEN 1 AND 7", name="position"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    archive_seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    section: Mapped[str] = mapped_column(wm_section, primary_key=True)
    position: Mapped[int] = mapped_column(SmallInteger)
    content: Mapped[str] = mapped_column(Text)
    content_sha256: Mapped[str] = mapped_column(String(64))
    token_count: Mapped[int] = mapped_column(Integer)
    item_count: Mapped[int] = mapped_column(Integer)
    op_requested: Mapped[str | None] = mapped_column(String(16))
    op_applied: Mapped[str] = mapped_column(String(16))
    guard: Mapped[str | None] = mapped_column(String(64))
    reason: Mapped[str] = mapped_column(String(64))
    details: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    sources: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    """Each item's message seqs (``app.wm.provenance.ItemSource``), in item order."""
    generator: Mapped[str] = mapped_column(String(32))
    model: Mapped[str | None] = mapped_column(Text)
    prompt_version: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[CreatedAt]


class ArchiveAction(Base):
    """An operator action on an archive: a retry or a clear, by a key or from the command line."""

    __tablename__ = "archive_actions"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id", "archive_seq"],
            ["archives.tenant_id", "archives.agent_session_id", "archives.archive_seq"],
            ondelete="CASCADE",
        ),
        CheckConstraint("action IN ('retry', 'clear')", name="action"),
        CheckConstraint(
            "(actor = 'api_key') = (api_key_id IS NOT NULL) AND actor IN ('api_key', 'operator')",
            name="actor",
        ),
        Index(
            "ix_archive_actions_tenant_id_agent_session_id",
            "tenant_id",
            "agent_session_id",
            "archive_seq",
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    action_id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    archive_seq: Mapped[int] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(Text)
    api_key_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[CreatedAt]


class ClaimableArchive(Base):
    """An agent session with pending or running archives, and when it may next have work.

    Written in the commit's transaction (and by a re-queue, a retry, a finished archive); read by
    the claim, which then claims that agent session's archive by its tenant. A table a
    tenant-distributed cluster keeps whole on every node (``docs/scaling.md``)."""

    __tablename__ = "claimable_archives"
    __table_args__ = (Index("ix_claimable_archives_available_at", "available_at"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    available_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class PreparedGeneration(Base):
    """An idle agent session's generation, run ahead of its commit: the state the generator
    reached over the closed batches of ``first_seq`` … ``end_seq``, from the working memory of
    the done archive ``prior_archive_seq`` (0: none). At most one per agent session; a cache
    derived from its messages (``app.archives.prepared_repository``)."""

    __tablename__ = "prepared_generations"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            ondelete="CASCADE",
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    prior_archive_seq: Mapped[int] = mapped_column(Integer)
    first_seq: Mapped[int] = mapped_column(BigInteger)
    end_seq: Mapped[int] = mapped_column(BigInteger)
    budget: Mapped[int] = mapped_column(Integer)
    fingerprint: Mapped[str] = mapped_column(Text)
    state: Mapped[dict[str, Any]]
    created_at: Mapped[CreatedAt]
