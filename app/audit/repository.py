"""SQL over the audit views and the auditor logins. Flushes, never commits.

``AuditRepository`` reads the views of ``docs/audit.md`` for one tenant scope (row-level security
applies, the views being ``security_invoker``). The auditor-login statements are the operator's:
they run in a system transaction, create and drop database roles, and never read tenant data.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import column, delete, select, table, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import as_tenant
from app.models import AuditorLogin
from app.tenancy.principal import Scope

AUDITOR_ROLE = "workmem_auditor"

guard_events = table(
    "wm_guard_events",
    column("tenant_id"),
    column("agent_session_id"),
    column("archive_seq"),
    column("section"),
    column("position"),
    column("reason"),
)


@dataclass(frozen=True, slots=True)
class Intervention:
    """A section of an archive where a guard overruled or changed the model's op."""

    archive_seq: int
    section: str
    reason: str


@dataclass(frozen=True, slots=True)
class TextSpan:
    """A text was in ``section`` from archive ``entered_archive_seq`` until it left in
    ``left_archive_seq`` (``None``: it is still there)."""

    section: str
    entered_archive_seq: int
    entered_at: datetime
    left_archive_seq: int | None
    left_at: datetime | None


_TEXT_PRESENCE = text(
    "SELECT section::text, entered_archive_seq, entered_at, left_archive_seq, left_at"
    " FROM wm_text_presence(CAST(:agent_session_id AS uuid), :needle)"
)


class AuditRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    async def interventions(
        self, agent_session_id: uuid.UUID, *, from_archive: int, to_archive: int
    ) -> list[Intervention]:
        """Guard events of archives ``from_archive..to_archive``, in archive and section order."""
        rows = await self.db.execute(
            select(guard_events.c.archive_seq, guard_events.c.section, guard_events.c.reason)
            .where(
                guard_events.c.tenant_id == self.scope.tenant_id,
                guard_events.c.agent_session_id == agent_session_id,
                guard_events.c.archive_seq.between(from_archive, to_archive),
            )
            .order_by(guard_events.c.archive_seq, guard_events.c.position)
        )
        return [Intervention(row[0], str(row[1]), row[2]) for row in rows.all()]

    async def text_presence(self, agent_session_id: uuid.UUID, needle: str) -> list[TextSpan]:
        """Query 4 of ``docs/audit.md``: when ``needle`` entered and left each section."""
        rows = await self.db.execute(
            _TEXT_PRESENCE, {"agent_session_id": str(agent_session_id), "needle": needle}
        )
        return [TextSpan(*row) for row in rows.all()]


async def _as_tenant(db: AsyncSession, tenant_id: uuid.UUID) -> None:
    # auditor_logins forces row-level security on its owner too: read and write as the tenant.
    await as_tenant(db, tenant_id)


async def _run_formatted(db: AsyncSession, template: str, **values: str) -> None:
    """Run DDL that Postgres itself quoted with ``format`` (identifiers and passwords cannot be
    bound parameters); colons are escaped so the text is never read as a bind parameter."""
    placeholders = ", ".join(f"CAST(:{name} AS text)" for name in values)
    statement = await db.scalar(text(f"SELECT format('{template}', {placeholders})"), values)
    await db.execute(text(str(statement).replace(":", "\\:")))


async def role_exists(db: AsyncSession, role: str) -> bool:
    found = await db.scalar(text("SELECT 1 FROM pg_roles WHERE rolname = :role"), {"role": role})
    return found is not None


async def create_auditor_login(
    db: AsyncSession, *, tenant_id: uuid.UUID, login_role: str, password: str
) -> None:
    """A login role in ``workmem_auditor``, read-only by default, mapped to ``tenant_id``."""
    await _run_formatted(
        db,
        "CREATE ROLE %I LOGIN PASSWORD %L NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS"
        f" IN ROLE {AUDITOR_ROLE}",
        login_role=login_role,
        password=password,
    )
    await _run_formatted(
        db, "ALTER ROLE %I SET default_transaction_read_only = on", login_role=login_role
    )
    await _as_tenant(db, tenant_id)
    db.add(AuditorLogin(tenant_id=tenant_id, login_role=login_role))
    await db.flush()


async def auditor_logins(db: AsyncSession, tenant_id: uuid.UUID) -> Sequence[AuditorLogin]:
    await _as_tenant(db, tenant_id)
    return (
        await db.scalars(
            select(AuditorLogin)
            .where(AuditorLogin.tenant_id == tenant_id)
            .order_by(AuditorLogin.created_at)
        )
    ).all()


async def drop_auditor_login(db: AsyncSession, *, tenant_id: uuid.UUID, login_role: str) -> bool:
    """Drop a login created by ``create_auditor_login``; ``False`` when the tenant has none of
    that name (no other role can be dropped this way)."""
    await _as_tenant(db, tenant_id)
    removed = await db.scalar(
        delete(AuditorLogin)
        .where(AuditorLogin.tenant_id == tenant_id, AuditorLogin.login_role == login_role)
        .returning(AuditorLogin.login_role)
    )
    if removed is None:
        return False
    await _run_formatted(db, "DROP ROLE %I", login_role=removed)
    return True
