"""A tenant's retention policy: how long raw messages, idle agent sessions and memories stay.

One row per tenant that set one; no row, or a NULL limit, keeps everything (the default).
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Integer, text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models.types import CreatedAt


class RetentionPolicy(Base):
    __tablename__ = "retention_policies"
    __table_args__ = (
        CheckConstraint("archive_messages_days BETWEEN 1 AND 36500", name="archive_messages_days"),
        CheckConstraint("idle_session_days BETWEEN 1 AND 36500", name="idle_session_days"),
        CheckConstraint("jsonb_typeof(memory_days) = 'object'", name="memory_days"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.tenant_id", ondelete="CASCADE"), primary_key=True
    )
    archive_messages_days: Mapped[int | None] = mapped_column(Integer)
    idle_session_days: Mapped[int | None] = mapped_column(Integer)
    memory_days: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    """Days a new memory of each category lives (``{"event": 30}``); a category not named
    never expires."""
    updated_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    """The API key that set the policy; NULL when the operator's command did."""
    updated_at: Mapped[CreatedAt]
