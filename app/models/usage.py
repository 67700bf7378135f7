"""What the models cost: one row per model or embedding call.

``model_calls`` holds the tenant, the agent session and archive the call worked for (when it
worked for one), its purpose, the model, the tokens the provider reported, the latency and the
outcome; never a prompt, a message or a key. Deleting the agent session (or erasing its user)
keeps the row for the tenant's bill and forgets which agent session it was.
"""

from __future__ import annotations

import uuid

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models.types import CreatedAt

PURPOSES = ("wm_create", "wm_update", "extraction", "embedding", "query_embedding", "other")
OUTCOMES = ("ok", "error", "refused")


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(value) for value in values)})"


class ModelCall(Base):
    __tablename__ = "model_calls"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            ondelete="SET NULL (agent_session_id)",
        ),
        CheckConstraint(_one_of("purpose", PURPOSES), name="purpose"),
        CheckConstraint(_one_of("outcome", OUTCOMES), name="outcome"),
        CheckConstraint(
            "input_tokens >= 0 AND output_tokens >= 0 AND latency_ms >= 0", name="amounts"
        ),
        Index("ix_model_calls_tenant_id_created_at", "tenant_id", "created_at"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True),
        ForeignKey("tenants.tenant_id", ondelete="CASCADE"),
        primary_key=True,
    )
    call_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()")
    )
    agent_session_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    archive_seq: Mapped[int | None] = mapped_column(Integer)
    purpose: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(Text)
    input_tokens: Mapped[int] = mapped_column(Integer)
    output_tokens: Mapped[int] = mapped_column(Integer)
    latency_ms: Mapped[int] = mapped_column(Integer)
    outcome: Mapped[str] = mapped_column(Text)
    created_at: Mapped[CreatedAt]
