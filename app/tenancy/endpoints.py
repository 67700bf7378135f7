"""Operator HTTP routes under ``/v1/admin``: tenants and their API keys."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Response, status

from app.deps import DatabaseDep
from app.tenancy import service
from app.tenancy.auth import Authenticator, Operator, authenticator
from app.tenancy.schemas import ApiKeyCreate, ApiKeyIssued, ApiKeyRead, TenantCreate, TenantRead

router = APIRouter(prefix="/v1/admin", tags=["operator"])


@router.post("/tenants", status_code=status.HTTP_201_CREATED)
async def create_tenant(body: TenantCreate, _: Operator, database: DatabaseDep) -> TenantRead:
    async with database.unscoped() as db:
        tenant = await service.create_tenant(db, body.name)
        return TenantRead.model_validate(tenant, from_attributes=True)


@router.post("/tenants/{tenant_id}/api-keys", status_code=status.HTTP_201_CREATED)
async def create_api_key(
    tenant_id: uuid.UUID,
    body: ApiKeyCreate,
    _: Operator,
    database: DatabaseDep,
) -> ApiKeyIssued:
    async with database.unscoped() as db:
        row, plaintext = await service.issue_key(
            db, tenant_id, role=body.role, name=body.name, user_id=body.user_id
        )
        read = ApiKeyRead.model_validate(row, from_attributes=True)
    return ApiKeyIssued(**read.model_dump(), key=plaintext)


@router.delete("/api-keys/{api_key_id}", status_code=status.HTTP_204_NO_CONTENT)
async def revoke_api_key(
    api_key_id: uuid.UUID,
    _: Operator,
    database: DatabaseDep,
    auth: Annotated[Authenticator, Depends(authenticator)],
) -> Response:
    async with database.unscoped() as db:
        await service.revoke_key(db, api_key_id)
    auth.forget()
    return Response(status_code=status.HTTP_204_NO_CONTENT)
