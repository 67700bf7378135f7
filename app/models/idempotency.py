"""Idempotency keys: the first answer of a write retried under the same ``Idempotency-Key``.

One row per tenant and key, written in the transaction of the write it answers; a retry reads
the answer back instead of writing again. Expired rows are purged by the archive worker.
"""

from __future__ import annotations

import uuid

from sqlalchemy import ForeignKey, Index, LargeBinary, SmallInteger, String, Text, text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models.types import CreatedAt


class IdempotencyKey(Base):
    __tablename__ = "idempotency_keys"
    __table_args__ = (
        Index("ix_idempotency_keys_created_at", "created_at"),
        Index(
            "ix_idempotency_keys_tenant_id_agent_session_id",
            "tenant_id",
            "agent_session_id",
            postgresql_where=text("agent_session_id IS NOT NULL"),
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True),
        ForeignKey("tenants.tenant_id", ondelete="CASCADE"),
        primary_key=True,
    )
    idempotency_key: Mapped[str] = mapped_column(Text, primary_key=True)
    request_sha256: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int | None] = mapped_column(SmallInteger)
    response_body: Mapped[bytes | None] = mapped_column(LargeBinary)
    agent_session_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    """The agent session the write was about (erasing its user removes the answer)."""
    created_at: Mapped[CreatedAt]
