"""Archives: committed seq ranges of an agent session's messages.

No message row belongs to an archive by copy: an archive is ``[start_seq, end_seq]`` over the
append-only messages table, plus the working memory produced for it.
"""

from __future__ import annotations

import uuid

from sqlalchemy import BigInteger, CheckConstraint, ForeignKeyConstraint, Integer, Text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models.types import CreatedAt


class Archive(Base):
    __tablename__ = "archives"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            ondelete="CASCADE",
        ),
        CheckConstraint("start_seq <= end_seq", name="range"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    agent_session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    archive_seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    start_seq: Mapped[int] = mapped_column(BigInteger)
    end_seq: Mapped[int] = mapped_column(BigInteger)
    overview: Mapped[str | None] = mapped_column(Text)
    abstract: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[CreatedAt]
