"""Agent sessions and their append-only messages.

An agent session row carries the O(1) counters the hot paths read (last seq, archived-up-to seq,
pending and total tokens); messages are never updated or moved once written.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Computed,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import TSVECTOR, UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models.types import CreatedAt


class AgentSession(Base):
    __tablename__ = "agent_sessions"
    __table_args__ = (
        # A client's name for an agent session is unique per tenant and user (NULL user: one
        # more namespace), so a key bound to one user never learns another user's names.
        Index(
            "uq_agent_sessions_tenant_id_user_id_external_id",
            "tenant_id",
            "user_id",
            "external_id",
            unique=True,
            postgresql_where=text("external_id IS NOT NULL"),
            postgresql_nulls_not_distinct=True,
        ),
        Index(
            "ix_agent_sessions_tenant_id_created_at", "tenant_id", "created_at", "agent_session_id"
        ),
        Index("ix_agent_sessions_tenant_id_user_id", "tenant_id", "user_id"),
        CheckConstraint("keep_recent_count BETWEEN 0 AND 10000", name="keep_recent_count"),
        # A fork's parent cannot be deleted while the fork exists (docs/api.md, forks).
        ForeignKeyConstraint(
            ["tenant_id", "parent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            name="fk_agent_sessions_parent",
        ),
        Index(
            "ix_agent_sessions_tenant_id_parent_session_id",
            "tenant_id",
            "parent_session_id",
            postgresql_where=text("parent_session_id IS NOT NULL"),
        ),
        CheckConstraint("archived_upto_seq <= last_seq", name="archived_upto_seq"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True),
        ForeignKey("tenants.tenant_id", ondelete="CASCADE"),
        primary_key=True,
    )
    agent_session_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()")
    )
    external_id: Mapped[str | None] = mapped_column(Text)
    user_id: Mapped[str | None] = mapped_column(Text)
    agent_id: Mapped[str | None] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any]] = mapped_column(
        "metadata", server_default=text("'{}'::jsonb")
    )
    keep_recent_count: Mapped[int] = mapped_column(Integer, server_default=text("10"))
    last_seq: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    archived_upto_seq: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    turn_count: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    pending_tokens: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    total_tokens: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    archived_tokens: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    archive_count: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    stored_bytes: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    """JSON bytes of the messages and their metadata, kept by the append (stored-bytes quota)."""
    memory_policy: Mapped[dict[str, Any] | None]
    """The agent session's own memory policy (the fields set); ``None``: none set."""
    record_contexts: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    """Record every context in the ledger unless the request says ``record=false``."""
    parent_session_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    """The agent session this one was forked from (``None``: not a fork)."""
    forked_at_archive_seq: Mapped[int | None] = mapped_column(Integer)
    forked_at_seq: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[CreatedAt]
    updated_at: Mapped[CreatedAt]


class AgentSessionLineage(Base):
    """One segment of a fork's history that lives in another agent session: its messages up
    to ``upto_seq`` and archives up to ``upto_archive_seq`` (after the previous segment's)."""

    __tablename__ = "agent_session_lineage"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            ondelete="CASCADE",
            name="fk_agent_session_lineage_session",
        ),
        # An ancestor cannot be deleted while a fork reads its rows.
        ForeignKeyConstraint(
            ["tenant_id", "ancestor_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            name="fk_agent_session_lineage_ancestor",
        ),
        CheckConstraint("upto_seq >= 0", name="upto_seq"),
        CheckConstraint("upto_archive_seq >= 0", name="upto_archive_seq"),
        Index(
            "ix_agent_session_lineage_tenant_id_ancestor_session_id",
            "tenant_id",
            "ancestor_session_id",
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    ancestor_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    upto_seq: Mapped[int] = mapped_column(BigInteger)
    upto_archive_seq: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[CreatedAt]


class Message(Base):
    __tablename__ = "messages"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            ondelete="CASCADE",
        ),
        CheckConstraint("role IN ('system', 'user', 'assistant', 'tool')", name="role"),
        # History search (``workmem_history_search``) matches the stored words; updated on each
        # insert rather than through a pending list, so a search right after heavy appends
        # reads no unmerged entries.
        Index(
            "ix_messages_content_words",
            "content_words",
            postgresql_using="gin",
            postgresql_with={"fastupdate": "off"},
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    role: Mapped[str] = mapped_column(String(16))
    turn: Mapped[int] = mapped_column(Integer)
    message: Mapped[dict[str, Any]]
    token_count: Mapped[int] = mapped_column(Integer)
    content_text: Mapped[str] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any] | None] = mapped_column("metadata")
    created_at: Mapped[datetime] = mapped_column(server_default=text("now()"))
    content_words: Mapped[str] = mapped_column(
        TSVECTOR,
        Computed(
            "to_tsvector('english'::regconfig, "
            "translate(\"left\"(content_text, 100000), '/.\\', '   '::text))",
            persisted=True,
        ),
        deferred=True,
    )
    """History search's words: those of the first 100 000 characters, with "/", "." and "\\"
    read as spaces (paths and dotted names are words). Postgres computes it on insert and again
    whenever the content changes (a redaction takes the words out with the text)."""


class MessageRetraction(Base):
    """A live message withdrawn by its agent (``pop_item`` of an Agents SDK session): the
    message stays as stored; the context and the next working memory leave it out."""

    __tablename__ = "message_retractions"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id", "seq"],
            ["messages.tenant_id", "messages.agent_session_id", "messages.seq"],
            ondelete="CASCADE",
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    retracted_at: Mapped[CreatedAt]


class MessageRedaction(Base):
    """A message whose content was replaced by ``[redacted]``: who (the key), when and why.
    Holds no content of its own."""

    __tablename__ = "message_redactions"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id", "seq"],
            ["messages.tenant_id", "messages.agent_session_id", "messages.seq"],
            ondelete="CASCADE",
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    redacted_by: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    reason: Mapped[str | None] = mapped_column(Text)
    redacted_at: Mapped[CreatedAt]
