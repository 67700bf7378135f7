"""Fixtures for archive tests: a database of their own (workers claim across tenants)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager

from app.archives.generation import WorkingMemoryGenerator
from app.config import Settings
from app.db import Database
from app.main import create_app
from tests.support.postgres import DatabaseUrls, PostgresForTests

AppFactory = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def own_urls(postgres: PostgresForTests) -> DatabaseUrls:
    """A freshly migrated database for tests whose workers must see only their own archives."""
    return postgres.create_app_database("wmjobs")


@pytest.fixture
async def own_database(own_urls: DatabaseUrls) -> AsyncIterator[Database]:
    """That database, as the service logs in to it."""
    database = Database.from_url(own_urls.app, pool_size=10)
    yield database
    await database.dispose()


@pytest.fixture
async def own_admin_database(own_urls: DatabaseUrls) -> AsyncIterator[Database]:
    """That database as its owner, for tests that change rows behind the service's back."""
    database = Database.from_url(own_urls.admin, pool_size=2)
    yield database
    await database.dispose()


@pytest.fixture
def app_client(settings: Settings) -> AppFactory:
    """``async with app_client(database, generator=…, **settings) as http``: an app of its own."""

    @asynccontextmanager
    async def factory(
        database: Database,
        *,
        generator: WorkingMemoryGenerator | None = None,
        **overrides: Any,
    ) -> AsyncIterator[httpx.AsyncClient]:
        app = create_app(
            settings.model_copy(update=overrides), database=database, generator=generator
        )
        async with (
            LifespanManager(app) as manager,
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=manager.app), base_url="http://workmem.test"
            ) as http,
        ):
            yield http

    return factory
