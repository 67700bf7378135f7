"""The data lifecycle's own records: erasure tombstones and the keys that sign their receipts.

A tombstone (``user_erasures``) holds no content and no user id: the SHA-256 of the tenant and
the user id, the API key that asked, the times, and how many rows went from each table. While
unfinished it is the erasure's progress; finished, it keeps the signed receipt.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, LargeBinary, String, text
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models.types import CreatedAt


class UserErasure(Base):
    __tablename__ = "user_erasures"
    __table_args__ = (
        Index(
            "uq_user_erasures_unfinished",
            "tenant_id",
            "user_id_sha256",
            unique=True,
            postgresql_where=text("finished_at IS NULL"),
        ),
        Index(
            "ix_user_erasures_tenant_id_user_id_sha256", "tenant_id", "user_id_sha256", "started_at"
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.tenant_id", ondelete="CASCADE"), primary_key=True
    )
    erasure_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()")
    )
    user_id_sha256: Mapped[str] = mapped_column(String(64))
    requested_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    """The API key's id; NULL for the operator's command line."""
    started_at: Mapped[CreatedAt]
    finished_at: Mapped[datetime | None]
    removed: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    receipt: Mapped[dict[str, Any] | None] = mapped_column(JSONB)


class ReceiptKey(Base):
    """A tenant's Ed25519 key pair for erasure receipts (raw 32-byte keys)."""

    __tablename__ = "receipt_keys"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.tenant_id", ondelete="CASCADE"), primary_key=True
    )
    key_id: Mapped[str] = mapped_column(String(32))
    public_key: Mapped[bytes] = mapped_column(LargeBinary)
    private_key: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[CreatedAt]
