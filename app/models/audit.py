"""Auditor logins: which database login reads the audit views of which tenant.

One row per login role created by ``workmem auditors create``; the restrictive row-level
security policies of the audited tables look the tenant up here by ``session_user``.
"""

from __future__ import annotations

import uuid

from sqlalchemy import ForeignKey, Text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base
from app.models.types import CreatedAt


class AuditorLogin(Base):
    __tablename__ = "auditor_logins"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True),
        ForeignKey("tenants.tenant_id", ondelete="CASCADE"),
        primary_key=True,
    )
    login_role: Mapped[str] = mapped_column(Text, primary_key=True, unique=True)
    created_at: Mapped[CreatedAt]
