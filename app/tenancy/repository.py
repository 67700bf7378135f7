"""SQL for tenants and API keys. Flushes, never commits."""

from __future__ import annotations

import uuid

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import ApiKey, Tenant


async def insert_tenant(db: AsyncSession, name: str) -> Tenant:
    tenant = Tenant(name=name)
    db.add(tenant)
    await db.flush()
    await db.refresh(tenant)
    return tenant


async def tenant_exists(db: AsyncSession, tenant_id: uuid.UUID) -> bool:
    found = await db.scalar(select(Tenant.tenant_id).where(Tenant.tenant_id == tenant_id))
    return found is not None


async def insert_api_key(
    db: AsyncSession,
    *,
    tenant_id: uuid.UUID,
    prefix: str,
    secret_sha256: str,
    role: str,
    name: str | None,
    user_id: str | None,
) -> ApiKey:
    row = (
        await db.execute(
            insert(ApiKey)
            .values(
                tenant_id=tenant_id,
                prefix=prefix,
                secret_sha256=secret_sha256,
                role=role,
                name=name,
                user_id=user_id,
            )
            .returning(ApiKey)
        )
    ).scalar_one()
    return row


async def find_api_key_by_prefix(db: AsyncSession, prefix: str) -> ApiKey | None:
    return await db.scalar(select(ApiKey).where(ApiKey.prefix == prefix))


async def revoke_api_key(db: AsyncSession, api_key_id: uuid.UUID) -> ApiKey | None:
    return await db.scalar(
        update(ApiKey)
        .where(ApiKey.api_key_id == api_key_id)
        .values(revoked_at=func.coalesce(ApiKey.revoked_at, func.now()))
        .returning(ApiKey)
    )


async def touch_api_key(db: AsyncSession, tenant_id: uuid.UUID, api_key_id: uuid.UUID) -> None:
    # At most one write per key per minute: last_used_at is for humans, not an audit log.
    await db.execute(
        update(ApiKey)
        .where(
            ApiKey.tenant_id == tenant_id,
            ApiKey.api_key_id == api_key_id,
            func.coalesce(ApiKey.last_used_at, func.to_timestamp(0))
            < func.now() - func.make_interval(0, 0, 0, 0, 0, 1),
        )
        .values(last_used_at=func.now())
    )
