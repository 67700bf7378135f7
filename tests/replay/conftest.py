"""Fixtures for replay tests: the app on the shared test database, with a tenant's writer key
as every request's credential (replay sends no headers of its own)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from asgi_lifespan import LifespanManager

from app.config import Settings
from app.db import Database
from app.main import create_app
from tests.conftest import TenantKeys


@pytest.fixture
async def writer(
    settings: Settings, database: Database, tenant: TenantKeys
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, database=database)
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app),
            base_url="http://workmem.test",
            headers=tenant.write,
        ) as http,
    ):
        yield http
