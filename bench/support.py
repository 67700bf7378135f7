"""What every benchmark needs: a private Postgres, a migrated database, the app in process."""

from __future__ import annotations

import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
from asgi_lifespan import LifespanManager

from app.config import Settings
from app.db import Database
from app.main import create_app
from app.tenancy import service as tenancy
from app.tenancy.principal import Role
from tests.support.postgres import PostgresForTests


@dataclass
class Bench:
    postgres: PostgresForTests
    url: str
    admin_url: str
    database: Database
    http: httpx.AsyncClient
    headers: dict[str, str]

    @property
    def plain_url(self) -> str:
        """The owner's URL for psycopg: raw baselines run beside the service, not as it."""
        return self.admin_url.replace("postgresql+psycopg://", "postgresql://")


@asynccontextmanager
async def bench_app(pool_size: int = 20) -> AsyncIterator[Bench]:
    postgres = PostgresForTests.start()
    try:
        urls = postgres.create_app_database("wmbench")
        # The service logs in as workmem_app (it refuses the owner); raw baselines use the owner.
        url = urls.app
        database = Database.from_url(url, pool_size=pool_size)
        async with database.unscoped() as db:
            tenant = await tenancy.create_tenant(db, "bench")
            _, key = await tenancy.issue_key(db, tenant.tenant_id, role=Role.WRITER)
        settings = Settings(database_url=url, worker_enabled=False, pool_size=pool_size)
        app = create_app(settings, database=database)
        async with (
            LifespanManager(app) as manager,
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=manager.app), base_url="http://bench"
            ) as http,
        ):
            yield Bench(
                postgres, url, urls.admin, database, http, {"Authorization": f"Bearer {key}"}
            )
        await database.dispose()
    finally:
        postgres.stop()


async def operator_key(admin_url: str, tenant_name: str) -> str:
    """A new tenant and a writer key for it, made the way an operator makes them."""
    database = Database.from_url(admin_url, pool_size=1)
    try:
        async with database.unscoped() as db:
            tenant = await tenancy.create_tenant(db, tenant_name)
            _, key = await tenancy.issue_key(db, tenant.tenant_id, role=Role.WRITER)
    finally:
        await database.dispose()
    return key


async def median_s(action: Callable[[], Awaitable[object]], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        await action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)
