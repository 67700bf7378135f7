"""Idempotency keys: the first answer of a write retried under the same ``Idempotency-Key``.

One row per tenant and key, written in the transaction of the write it answers; a retry reads
the answer back instead of writing again. Expired rows are purged by the archive worker.
"""

from __future__ import annotations

import uuid

from sqlalchemy import ForeignKey, Index, LargeBinary, SmallInteger, String, Text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models.types import CreatedAt


class IdempotencyKey(Base):
    __tablename__ = "idempotency_keys"
    __table_args__ = (Index("ix_idempotency_keys_created_at", "created_at"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True),
        ForeignKey("tenants.tenant_id", ondelete="CASCADE"),
        primary_key=True,
    )
    idempotency_key: Mapped[str] = mapped_column(Text, primary_key=True)
    request_sha256: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int | None] = mapped_column(SmallInteger)
    response_body: Mapped[bytes | None] = mapped_column(LargeBinary)
    created_at: Mapped[CreatedAt]
