"""Pins and their audit trail.

A pin is a text (or a message's exact text) an agent session must never lose from its context.
Unpinning sets ``unpinned_at``/``unpinned_by``; the row stays. ``pin_events`` is append-only:
one row per pin and per unpin, with who and when.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    String,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models.archives import wm_section
from app.models.types import CreatedAt


class Pin(Base):
    __tablename__ = "pins"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            ondelete="CASCADE",
        ),
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id", "message_seq"],
            ["messages.tenant_id", "messages.agent_session_id", "messages.seq"],
            ondelete="CASCADE",
        ),
        Index("ix_pins_tenant_id_agent_session_id", "tenant_id", "agent_session_id", "created_at"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    pin_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()")
    )
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    text: Mapped[str] = mapped_column(Text)
    message_seq: Mapped[int | None] = mapped_column(BigInteger)
    section: Mapped[str | None] = mapped_column(wm_section)
    token_count: Mapped[int] = mapped_column(Integer)
    pinned_by: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    created_at: Mapped[CreatedAt]
    unpinned_at: Mapped[datetime | None]
    unpinned_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))


class PinEvent(Base):
    __tablename__ = "pin_events"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            ondelete="CASCADE",
        ),
        ForeignKeyConstraint(
            ["tenant_id", "pin_id"], ["pins.tenant_id", "pins.pin_id"], ondelete="CASCADE"
        ),
        CheckConstraint("event IN ('pin', 'unpin')", name="event"),
        Index(
            "ix_pin_events_tenant_id_agent_session_id", "tenant_id", "agent_session_id", "event_id"
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    event_id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    pin_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    event: Mapped[str] = mapped_column(String(8))
    actor: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    text: Mapped[str] = mapped_column(Text)
    message_seq: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[CreatedAt]
