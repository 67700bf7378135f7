"""Shared fixtures: one Postgres per test process (under xdist, per worker), a migrated
database, the app, and tenants with keys.

API tests commit for real; each test creates its own tenant, so row-level security keeps tests
apart exactly as it keeps customers apart.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager
from pydantic import SecretStr

from app.archives.generation import WorkingMemoryGenerator
from app.config import Settings
from app.db import SERVICE_KEY_VARIABLE, Database
from app.main import create_app
from tests.support.backends import (
    BackendError,
    Choice,
    asked_backend,
    choose_backend,
    docker_unavailable,
)
from tests.support.clusters import RUN_DATA_DIRS, postgres_processes
from tests.support.postgres import DatabaseUrls, PostgresForTests
from tests.support.tenants import ADMIN_TOKEN, AppFactory, TenantKeys, make_tenant
from tests.support.workers import (
    group_shared_fixtures,
    is_worker,
    name_groups,
    report_to_controller,
    reported_by,
)

# Test modules import these from here or from tests.support.tenants.
__all__ = ["ADMIN_TOKEN", "AppFactory", "TenantKeys", "make_tenant"]

# The key of the service's work across tenants: every migrated test database registers it, and
# every Database and `workmem` process of the run reads it from the environment (xdist workers
# inherit it from the controller, which imports this module first).
SERVICE_KEY = os.environ.setdefault(SERVICE_KEY_VARIABLE, secrets.token_urlsafe(32))

WORKER_DATA_DIRS = pytest.StashKey[list[Path]]()


def pytest_configure(config: pytest.Config) -> None:
    try:
        asked_backend(os.environ)
    except BackendError as error:
        raise pytest.UsageError(str(error)) from None
    config.stash[WORKER_DATA_DIRS] = []


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    group_shared_fixtures(items)


@pytest.hookimpl(tryfirst=True)  # before a worker sends the test ids to the controller
def pytest_collection_finish(session: pytest.Session) -> None:
    name_groups(session.config, session.items)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object | None) -> None:
    """On the xdist controller: a worker finished; keep the clusters it started."""
    node.config.stash[WORKER_DATA_DIRS].extend(reported_by(node))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run leaves no cluster behind: every data directory it started one in (in this
    process, or in any xdist worker) is checked for postgres processes (server processes were
    stopped with real signals)."""
    if is_worker(session.config):
        report_to_controller(session.config, RUN_DATA_DIRS)
        return
    started = [*RUN_DATA_DIRS, *session.config.stash[WORKER_DATA_DIRS]]
    left = postgres_processes(started)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"embedded clusters started by this run: {len(started)}; still running: {len(left)}"
        )
    if left:
        if reporter is not None:
            for data_dir, pids in left.items():
                reporter.write_line(f"left running: {data_dir} (postgres pids {pids})")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def postgres_backend() -> Choice:
    """The one place that chooses the database backend (``WORKMEM_TEST_POSTGRES``; see
    ``tests/support/backends.py``): the embedded cluster unless a container is asked for."""
    return choose_backend(os.environ, docker_unavailable)


@pytest.fixture(scope="session")
def postgres(postgres_backend: Choice) -> Iterator[PostgresForTests]:
    """This process's server: under xdist each worker has its own."""
    if postgres_backend.unavailable is not None:
        pytest.skip(postgres_backend.unavailable)
    server = PostgresForTests.start(postgres_backend)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def database_urls(postgres: PostgresForTests) -> DatabaseUrls:
    return postgres.create_app_database("wmtest")


@pytest.fixture(scope="session")
def database_url(database_urls: DatabaseUrls) -> str:
    """The service's own login (``workmem_app``): what every app in the tests connects as."""
    return database_urls.app


@pytest.fixture(scope="session")
async def database(database_url: str) -> AsyncIterator[Database]:
    db = Database.from_url(database_url, pool_size=10)
    yield db
    await db.dispose()


@pytest.fixture(scope="session")
async def admin_database(database_urls: DatabaseUrls) -> AsyncIterator[Database]:
    """The schema owner (a superuser here): for tests that set up or inspect rows across
    tenants directly, never for the app."""
    db = Database.from_url(database_urls.admin, pool_size=2)
    yield db
    await db.dispose()


@pytest.fixture(scope="session")
def settings(database_url: str) -> Settings:
    # No background work in process: tests that want the worker or preparing turn them on.
    return Settings(
        database_url=database_url,
        admin_token=SecretStr(ADMIN_TOKEN),
        worker_enabled=False,
        prepare_idle_s=0,
    )


@pytest.fixture(scope="session")
async def client(settings: Settings, database: Database) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, database=database)
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://workmem.test"
        ) as http,
    ):
        yield http


@pytest.fixture
async def tenant(database: Database) -> TenantKeys:
    return await make_tenant(database, "tenant-a")


@pytest.fixture
async def other_tenant(database: Database) -> TenantKeys:
    return await make_tenant(database, "tenant-b")


# Apps of their own, on databases of their own: for tests whose workers claim across tenants.


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
