"""SQL for tenants and API keys: calls of the privileged functions that manage them.

Tenants and keys are managed across tenants (by the operator) and keys are looked up before any
tenant is known (authentication), so these statements call the named ``SECURITY DEFINER``
functions of ``docs/operations.md`` instead of reading the tables. Flushes, never commits.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import as_tenant
from app.models import ApiKey, ApiKeyPrefix, Tenant

_KEY_COLUMNS = "api_key_id, tenant_id, prefix, role, name, user_id, created_at, revoked_at"


@dataclass(frozen=True, slots=True)
class AuthenticatedKey:
    """A key the database found valid and unrevoked: whose it is, and the tenant token it
    signed for this tenant."""

    tenant_id: uuid.UUID
    api_key_id: uuid.UUID
    role: str
    user_id: str | None
    token: str


async def insert_tenant(db: AsyncSession, name: str) -> Tenant:
    row = (
        await db.execute(
            text("SELECT tenant_id, name, created_at FROM workmem_create_tenant(:name)"),
            {"name": name},
        )
    ).one()
    return Tenant(tenant_id=row.tenant_id, name=row.name, created_at=row.created_at)


async def insert_api_key(
    db: AsyncSession,
    *,
    tenant_id: uuid.UUID,
    prefix: str,
    secret_sha256: str,
    role: str,
    name: str | None,
    user_id: str | None,
) -> ApiKey | None:
    """The new key, or ``None`` when the tenant does not exist."""
    row = (
        await db.execute(
            text(
                f"SELECT {_KEY_COLUMNS} FROM workmem_issue_api_key("  # noqa: S608 - fixed
                ":tenant_id, :prefix, :secret_sha256, :role, :name, :user_id)"
            ),
            {
                "tenant_id": tenant_id,
                "prefix": prefix,
                "secret_sha256": secret_sha256,
                "role": role,
                "name": name,
                "user_id": user_id,
            },
        )
    ).one_or_none()
    return None if row is None else ApiKey(**row._asdict())


async def authenticate(db: AsyncSession, prefix: str, secret: str) -> AuthenticatedKey | None:
    """The key, checked by the database (the secret's digest, not revoked), with a token."""
    row = (
        await db.execute(
            text(
                "SELECT tenant_id, api_key_id, role, user_id, token"
                " FROM workmem_authenticate(:prefix, :secret)"
            ),
            {"prefix": prefix, "secret": secret},
        )
    ).one_or_none()
    return None if row is None else AuthenticatedKey(*row)


async def revoke_api_key(db: AsyncSession, api_key_id: uuid.UUID) -> ApiKey | None:
    row = (
        await db.execute(
            text(f"SELECT {_KEY_COLUMNS} FROM workmem_revoke_api_key(:api_key_id)"),  # noqa: S608
            {"api_key_id": api_key_id},
        )
    ).one_or_none()
    return None if row is None else ApiKey(**row._asdict())


async def tenant_exists(db: AsyncSession, tenant_id: uuid.UUID) -> bool:
    """Whether the tenant exists: asked under that tenant, whose own row it may see (in a
    transaction with the service key, which signs the tenant's token)."""
    await as_tenant(db, tenant_id)
    found = await db.scalar(
        text("SELECT 1 FROM tenants WHERE tenant_id = :tenant_id"), {"tenant_id": tenant_id}
    )
    return found is not None


async def tenant_ids(db: AsyncSession) -> list[uuid.UUID]:
    """Every tenant, for maintenance jobs that then work tenant by tenant."""
    return list((await db.execute(text("SELECT * FROM workmem_tenant_ids()"))).scalars())


async def schema_revision(db: AsyncSession) -> str | None:
    revision: str | None = await db.scalar(text("SELECT workmem_schema_revision()"))
    return revision


# A tenant admin's own keys (``/v1/keys``): ordinary statements under the tenant's transaction,
# where row-level security shows that tenant's keys only.


async def tenant_keys(
    db: AsyncSession, tenant_id: uuid.UUID, *, after: uuid.UUID | None, limit: int
) -> list[ApiKey]:
    statement = select(ApiKey).where(ApiKey.tenant_id == tenant_id)
    if after is not None:
        statement = statement.where(ApiKey.api_key_id > after)
    statement = statement.order_by(ApiKey.api_key_id).limit(limit)
    return list((await db.scalars(statement)).all())


async def insert_tenant_key(
    db: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    prefix: str,
    secret_sha256: str,
    role: str,
    name: str | None,
    user_id: str | None,
) -> ApiKey:
    api_key_id = uuid.uuid4()
    # The prefix first: unique across tenants by its primary key (docs/scaling.md).
    await db.execute(
        insert(ApiKeyPrefix).values(prefix=prefix, tenant_id=tenant_id, api_key_id=api_key_id)
    )
    statement = (
        insert(ApiKey)
        .values(
            tenant_id=tenant_id,
            api_key_id=api_key_id,
            prefix=prefix,
            secret_sha256=secret_sha256,
            role=role,
            name=name,
            user_id=user_id,
        )
        .returning(ApiKey)
    )
    return (await db.execute(statement)).scalar_one()


async def revoke_tenant_key(
    db: AsyncSession, tenant_id: uuid.UUID, api_key_id: uuid.UUID
) -> ApiKey | None:
    statement = (
        update(ApiKey)
        .where(ApiKey.tenant_id == tenant_id, ApiKey.api_key_id == api_key_id)
        .values(revoked_at=func.coalesce(ApiKey.revoked_at, func.now()))
        .returning(ApiKey)
    )
    return (await db.execute(statement)).scalar_one_or_none()
