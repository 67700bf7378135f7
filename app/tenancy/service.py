"""Tenant and API-key logic: issuing, revoking and verifying keys. Flushes, never commits.

Every function here runs in a *system* transaction (the operator's management and key lookup are
the named cross-tenant paths); nothing here reads tenant data.
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import NotFound
from app.models import ApiKey, Tenant
from app.tenancy import repository
from app.tenancy.keys import generate_key, parse_key, secret_matches
from app.tenancy.principal import Principal, Role


async def create_tenant(db: AsyncSession, name: str) -> Tenant:
    return await repository.insert_tenant(db, name)


async def tenant_exists(db: AsyncSession, tenant_id: uuid.UUID) -> bool:
    return await repository.tenant_exists(db, tenant_id)


async def issue_key(
    db: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    role: Role,
    name: str | None = None,
    user_id: str | None = None,
) -> tuple[ApiKey, str]:
    """Create a key for the tenant; returns the row and the plaintext key (shown once)."""
    if not await repository.tenant_exists(db, tenant_id):
        raise NotFound(f"tenant {tenant_id} does not exist")
    issued = generate_key()
    row = await repository.insert_api_key(
        db,
        tenant_id=tenant_id,
        prefix=issued.prefix,
        secret_sha256=issued.secret_sha256,
        role=role.value,
        name=name,
        user_id=user_id,
    )
    return row, issued.plaintext


async def revoke_key(db: AsyncSession, api_key_id: uuid.UUID) -> ApiKey:
    row = await repository.revoke_api_key(db, api_key_id)
    if row is None:
        raise NotFound(f"API key {api_key_id} does not exist")
    return row


async def verify_key(db: AsyncSession, token: str) -> Principal | None:
    """The principal of a valid, unrevoked key; ``None`` for anything else."""
    parsed = parse_key(token)
    if parsed is None:
        return None
    row = await repository.find_api_key_by_prefix(db, parsed.prefix)
    if row is None or row.revoked_at is not None:
        return None
    if not secret_matches(parsed.secret, row.secret_sha256):
        return None
    await repository.touch_api_key(db, row.tenant_id, row.api_key_id)
    return Principal(
        tenant_id=row.tenant_id, api_key_id=row.api_key_id, role=Role(row.role), user_id=row.user_id
    )
