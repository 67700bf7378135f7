"""Tenant and API-key logic: issuing, revoking and verifying keys. Flushes, never commits.

The operator's functions run in an unscoped transaction (``Database.unscoped``) and reach the
tables only through the privileged functions of ``docs/operations.md``; ``TenantKeyService`` is
a tenant admin's management of its own tenant's keys, in that tenant's transaction. Nothing here
reads agent-session data.
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import TENANT_TOKENS
from app.errors import Forbidden, NotFound
from app.models import ApiKey, Tenant
from app.tenancy import repository
from app.tenancy.keys import generate_key, parse_key
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
    if row is None:
        raise NotFound(f"tenant {tenant_id} does not exist")
    return row, issued.plaintext


async def revoke_key(db: AsyncSession, api_key_id: uuid.UUID) -> ApiKey:
    row = await repository.revoke_api_key(db, api_key_id)
    if row is None:
        raise NotFound(f"API key {api_key_id} does not exist")
    return row


async def verify_key(db: AsyncSession, token: str) -> Principal | None:
    """The principal of a valid, unrevoked key; ``None`` for anything else.

    The database checks the secret and signs a tenant token, which this process then holds for
    the key's tenant (``app.db.TENANT_TOKENS``): the requests of the key run under it.
    """
    parsed = parse_key(token)
    if parsed is None:
        return None
    row = await repository.authenticate(db, parsed.prefix, parsed.secret)
    if row is None:
        return None
    TENANT_TOKENS.put(row.tenant_id, row.token)
    return Principal(
        tenant_id=row.tenant_id, api_key_id=row.api_key_id, role=Role(row.role), user_id=row.user_id
    )


async def tenant_ids(db: AsyncSession) -> list[uuid.UUID]:
    """Every tenant (maintenance jobs then open one tenant transaction at a time)."""
    return await repository.tenant_ids(db)


async def schema_revision(db: AsyncSession) -> str | None:
    """The database's migration revision (readiness)."""
    return await repository.schema_revision(db)


class TenantKeyService:
    """A tenant admin's own keys (DESIGN 10: ``/v1/keys``), in the tenant's transaction.

    Only an admin key that is not bound to a user manages keys: managing them is tenant-wide.
    """

    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        if principal.role is not Role.ADMIN:
            raise Forbidden("managing API keys needs an admin key")
        if principal.user_id is not None:
            raise Forbidden("a key bound to a user cannot manage the tenant's keys")
        self.db = db
        self.tenant_id = principal.tenant_id

    async def page(
        self, *, after: uuid.UUID | None, limit: int
    ) -> tuple[list[ApiKey], uuid.UUID | None]:
        rows = await repository.tenant_keys(self.db, self.tenant_id, after=after, limit=limit + 1)
        if len(rows) <= limit:
            return rows, None
        return rows[:limit], rows[limit - 1].api_key_id

    async def issue(
        self, *, role: Role, name: str | None, user_id: str | None
    ) -> tuple[ApiKey, str]:
        issued = generate_key()
        row = await repository.insert_tenant_key(
            self.db,
            self.tenant_id,
            prefix=issued.prefix,
            secret_sha256=issued.secret_sha256,
            role=role.value,
            name=name,
            user_id=user_id,
        )
        return row, issued.plaintext

    async def revoke(self, api_key_id: uuid.UUID) -> ApiKey:
        row = await repository.revoke_tenant_key(self.db, self.tenant_id, api_key_id)
        if row is None:
            raise NotFound(f"API key {api_key_id} not found")
        return row
