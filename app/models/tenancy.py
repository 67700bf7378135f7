"""Tenants and their API keys (only a SHA-256 of each secret is stored)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, Text, UniqueConstraint, text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models.types import CreatedAt


class Tenant(Base):
    __tablename__ = "tenants"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()")
    )
    name: Mapped[str] = mapped_column(Text)
    created_at: Mapped[CreatedAt]


class ApiKey(Base):
    __tablename__ = "api_keys"
    __table_args__ = (
        CheckConstraint("role IN ('admin', 'writer', 'reader')", name="role"),
        # Unique across tenants by ``api_key_prefixes``' primary key.
        UniqueConstraint("tenant_id", "prefix"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True),
        ForeignKey("tenants.tenant_id", ondelete="CASCADE"),
        primary_key=True,
    )
    api_key_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()")
    )
    prefix: Mapped[str] = mapped_column(String(16))
    secret_sha256: Mapped[str] = mapped_column(String(64))
    role: Mapped[str] = mapped_column(String(16))
    name: Mapped[str | None] = mapped_column(Text)
    user_id: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[CreatedAt]
    last_used_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]


class ApiKeyPrefix(Base):
    """A key's prefix, its tenant and id: authentication finds the tenant here, then reads the key
    by its tenant. Kept whole on every node of a tenant-distributed cluster
    (``docs/scaling.md``); read and written by the privileged key functions only."""

    __tablename__ = "api_key_prefixes"
    __table_args__ = (Index("ix_api_key_prefixes_api_key_id", "api_key_id"),)

    prefix: Mapped[str] = mapped_column(String(16), primary_key=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    api_key_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
