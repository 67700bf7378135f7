"""Tenants with one key per role, and the factory type of an app of its own.

API tests commit for real; each test creates its own tenant, so row-level security keeps tests
apart exactly as it keeps customers apart.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

import httpx

from app.db import Database
from app.tenancy import service as tenancy
from app.tenancy.principal import Principal, Role

ADMIN_TOKEN = "operator-secret-token-for-tests"

AppFactory = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@dataclass(frozen=True)
class TenantKeys:
    tenant_id: uuid.UUID
    admin: str
    writer: str
    reader: str

    def principal(self, role: Role = Role.WRITER) -> Principal:
        return Principal(tenant_id=self.tenant_id, api_key_id=uuid.uuid4(), role=role, user_id=None)

    @staticmethod
    def headers(key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    @property
    def write(self) -> dict[str, str]:
        return self.headers(self.writer)

    @property
    def read(self) -> dict[str, str]:
        return self.headers(self.reader)


async def make_tenant(database: Database, name: str = "tenant") -> TenantKeys:
    async with database.unscoped() as db:
        tenant = await tenancy.create_tenant(db, name)
        keys = {
            role: (await tenancy.issue_key(db, tenant.tenant_id, role=role))[1]
            for role in (Role.ADMIN, Role.WRITER, Role.READER)
        }
    return TenantKeys(tenant.tenant_id, keys[Role.ADMIN], keys[Role.WRITER], keys[Role.READER])
