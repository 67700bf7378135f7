"""Webhook subscriptions of a tenant, and the outbox of their deliveries with every attempt.

A delivery row is written in the same transaction as the state change it reports (an archive
finishing or failing, memories changing), one per subscribed endpoint; it is the delivery job
too: ``pending → sending → delivered | failed``, with ``next_attempt_at`` as its due time and,
while ``sending``, as its lease. Attempts are append-only. ``claimable_webhook_deliveries`` is
the claim's queue of the unfinished deliveries (one row each, with when it is next due).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models.types import CreatedAt


class WebhookSubscription(Base):
    __tablename__ = "webhook_subscriptions"
    __table_args__ = (
        CheckConstraint("cardinality(events) > 0", name="events"),
        Index(
            "ix_webhook_subscriptions_tenant_id_created_at",
            "tenant_id",
            "created_at",
            "webhook_id",
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True),
        ForeignKey("tenants.tenant_id", ondelete="CASCADE"),
        primary_key=True,
    )
    webhook_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()")
    )
    url: Mapped[str] = mapped_column(Text)
    events: Mapped[list[str]] = mapped_column(ARRAY(Text))
    secret: Mapped[str] = mapped_column(Text)
    description: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[CreatedAt]


class WebhookDelivery(Base):
    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "webhook_id"],
            ["webhook_subscriptions.tenant_id", "webhook_subscriptions.webhook_id"],
            ondelete="CASCADE",
        ),
        CheckConstraint("status IN ('pending', 'sending', 'delivered', 'failed')", name="status"),
        Index(
            "ix_webhook_deliveries_tenant_id_webhook_id",
            "tenant_id",
            "webhook_id",
            "created_at",
            "delivery_id",
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    delivery_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()")
    )
    webhook_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    event_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    event_type: Mapped[str] = mapped_column(String(32))
    payload: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(16), server_default=text("'pending'"))
    attempt: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    next_attempt_at: Mapped[datetime] = mapped_column(server_default=text("now()"))
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[CreatedAt]
    finished_at: Mapped[datetime | None]


class WebhookAttempt(Base):
    __tablename__ = "webhook_attempts"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "delivery_id"],
            ["webhook_deliveries.tenant_id", "webhook_deliveries.delivery_id"],
            ondelete="CASCADE",
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    delivery_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    attempt: Mapped[int] = mapped_column(Integer, primary_key=True)
    started_at: Mapped[datetime]
    duration_ms: Mapped[int] = mapped_column(Integer)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)


class ClaimableWebhookDelivery(Base):
    """A delivery not yet finished, and when it is next due (its retry, or its lease's end).

    Written with the delivery (the outbox's statement) and moved or deleted when an attempt is
    settled; read by the claim, which then claims the delivery by its tenant. A table a
    tenant-distributed cluster keeps whole on every node (``docs/scaling.md``)."""

    __tablename__ = "claimable_webhook_deliveries"
    __table_args__ = (Index("ix_claimable_webhook_deliveries_available_at", "available_at"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    delivery_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    available_at: Mapped[datetime] = mapped_column(server_default=text("now()"))
