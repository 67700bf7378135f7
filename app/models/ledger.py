"""The context ledger: what each recorded context was assembled from.

One row per recorded context request: ids, seq ranges, options, token counts and hashes; never a
copy of a text (the rows it names hold that). Append-only; deleting the agent session deletes
its rows.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models.types import CreatedAt


class ContextRecord(Base):
    __tablename__ = "context_records"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            ondelete="CASCADE",
        ),
        CheckConstraint("source IN ('context', 'compact', 'openviking')", name="source"),
        Index(
            "ix_context_records_tenant_id_agent_session_id",
            "tenant_id",
            "agent_session_id",
            "created_at",
            "context_id",
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    context_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()")
    )
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    recorded_by: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    source: Mapped[str] = mapped_column(String(16))
    summary_archive_seq: Mapped[int | None] = mapped_column(Integer)
    summary_covered_end_seq: Mapped[int | None] = mapped_column(BigInteger)
    summary_sections: Mapped[list[dict[str, Any]]] = mapped_column(
        JSONB, server_default=text("'[]'::jsonb")
    )
    summary_layer: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    pin_ids: Mapped[list[uuid.UUID]] = mapped_column(
        ARRAY(UUID(as_uuid=True)), server_default=text("'{}'")
    )
    pins_sent: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    memories: Mapped[list[dict[str, Any]]] = mapped_column(
        JSONB, server_default=text("'[]'::jsonb")
    )
    tail_start_seq: Mapped[int | None] = mapped_column(BigInteger)
    tail_end_seq: Mapped[int | None] = mapped_column(BigInteger)
    tail_ranges: Mapped[list[list[int]]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    filled_start_seq: Mapped[int | None] = mapped_column(BigInteger)
    filled_end_seq: Mapped[int | None] = mapped_column(BigInteger)
    filled_ranges: Mapped[list[list[int]]] = mapped_column(
        JSONB, server_default=text("'[]'::jsonb")
    )
    cleared_seqs: Mapped[list[int]] = mapped_column(ARRAY(BigInteger), server_default=text("'{}'"))
    retracted_seqs: Mapped[list[int]] = mapped_column(
        ARRAY(BigInteger), server_default=text("'{}'")
    )
    redacted_seqs: Mapped[list[int]] = mapped_column(ARRAY(BigInteger), server_default=text("'{}'"))
    options: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    tokens: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    hint: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    parts_sha256: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    message_count: Mapped[int] = mapped_column(Integer)
    messages_sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[CreatedAt]
