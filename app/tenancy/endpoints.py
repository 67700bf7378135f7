"""HTTP routes of tenants and keys: the operator's (``/v1/admin``) and a tenant admin's own
(``/v1/keys``)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response, status

from app.deps import DatabaseDep
from app.tenancy import service
from app.tenancy.auth import Authenticator, Operator, Reader, authenticator
from app.tenancy.schemas import (
    ApiKeyCreate,
    ApiKeyIssued,
    ApiKeyPage,
    ApiKeyRead,
    TenantCreate,
    TenantRead,
)
from app.web.problems import TENANT_ROUTE, WITH_BODY, problems
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/v1/admin",
    tags=["operator"],
    route_class=StrictJsonRoute,
    responses=problems(401, 403, 503),
)


@router.post("/tenants", status_code=status.HTTP_201_CREATED, responses=problems(*WITH_BODY))
async def create_tenant(body: TenantCreate, _: Operator, database: DatabaseDep) -> TenantRead:
    async with database.unscoped() as db:
        tenant = await service.create_tenant(db, body.name)
        return TenantRead.model_validate(tenant, from_attributes=True)


@router.post(
    "/tenants/{tenant_id}/api-keys",
    status_code=status.HTTP_201_CREATED,
    responses=problems(404, *WITH_BODY),
)
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


@router.delete(
    "/api-keys/{api_key_id}", status_code=status.HTTP_204_NO_CONTENT, responses=problems(404, 422)
)
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


keys_router = APIRouter(
    prefix="/v1/keys",
    tags=["keys"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE),
)


@keys_router.get("", responses=problems(422))
async def list_keys(
    principal: Reader,
    database: DatabaseDep,
    after: Annotated[uuid.UUID | None, Query(description="the next_after of a page")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> ApiKeyPage:
    """This tenant's keys (admin keys only), revoked ones included, oldest id first."""
    async with database.tenant(principal.tenant_id) as db:
        rows, next_after = await service.TenantKeyService(db, principal).page(
            after=after, limit=limit
        )
        items = [ApiKeyRead.model_validate(row, from_attributes=True) for row in rows]
    return ApiKeyPage(items=items, next_after=next_after)


@keys_router.post("", status_code=status.HTTP_201_CREATED, responses=problems(*WITH_BODY))
async def create_key(body: ApiKeyCreate, principal: Reader, database: DatabaseDep) -> ApiKeyIssued:
    """Issue a key of this tenant (admin keys only); the key is in this answer only."""
    async with database.tenant(principal.tenant_id) as db:
        row, plaintext = await service.TenantKeyService(db, principal).issue(
            role=body.role, name=body.name, user_id=body.user_id
        )
        read = ApiKeyRead.model_validate(row, from_attributes=True)
    return ApiKeyIssued(**read.model_dump(), key=plaintext)


@keys_router.delete(
    "/{api_key_id}", status_code=status.HTTP_204_NO_CONTENT, responses=problems(404, 422)
)
async def revoke_key(
    api_key_id: uuid.UUID,
    principal: Reader,
    database: DatabaseDep,
    auth: Annotated[Authenticator, Depends(authenticator)],
) -> Response:
    """Revoke a key of this tenant (admin keys only); every process refuses it within 5 s."""
    async with database.tenant(principal.tenant_id) as db:
        await service.TenantKeyService(db, principal).revoke(api_key_id)
    auth.forget()
    return Response(status_code=status.HTTP_204_NO_CONTENT)
