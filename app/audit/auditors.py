"""Auditor logins for operators: a database login that reads one tenant's audit views.

Owns naming the login, generating its password and the connection string handed to the auditor.
Runs in a system transaction opened by the caller (the CLI); flushes, never commits, and never
reads tenant data.
"""

from __future__ import annotations

import re
import secrets
import uuid
from dataclasses import dataclass

from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

from app.audit import repository
from app.errors import Conflict, InvalidInput, NotFound
from app.tenancy import service as tenancy

_LOGIN = re.compile(r"^[a-z_][a-z0-9_]{2,62}$")


@dataclass(frozen=True, slots=True)
class AuditorLogin:
    tenant_id: uuid.UUID
    login_role: str
    connection_url: str


def connection_url(database_url: str, login_role: str, password: str) -> str:
    """``database_url`` with the auditor's credentials, in the form psql and libpq accept."""
    url = make_url(database_url).set(
        drivername="postgresql", username=login_role, password=password
    )
    return url.render_as_string(hide_password=False)


async def create(
    db: AsyncSession, *, database_url: str, tenant_id: uuid.UUID, login_role: str | None = None
) -> AuditorLogin:
    if login_role is None:
        login_role = f"wm_auditor_{secrets.token_hex(4)}"
    elif not _LOGIN.match(login_role):
        raise InvalidInput(
            "a login name is 3–63 characters: lower-case letters, digits and '_', "
            "not starting with a digit"
        )
    if not await tenancy.tenant_exists(db, tenant_id):
        raise NotFound(f"tenant {tenant_id} does not exist")
    if await repository.role_exists(db, login_role):
        raise Conflict(f"a database role named {login_role!r} exists already")
    password = secrets.token_hex(24)
    await repository.create_auditor_login(
        db, tenant_id=tenant_id, login_role=login_role, password=password
    )
    return AuditorLogin(tenant_id, login_role, connection_url(database_url, login_role, password))


async def listed(db: AsyncSession, tenant_id: uuid.UUID) -> list[str]:
    return [row.login_role for row in await repository.auditor_logins(db, tenant_id)]


async def drop(db: AsyncSession, *, tenant_id: uuid.UUID, login_role: str) -> None:
    if not await repository.drop_auditor_login(db, tenant_id=tenant_id, login_role=login_role):
        raise NotFound(f"tenant {tenant_id} has no auditor login {login_role!r}")
