"""Fixtures for audit tests: one database with the scripted audit data (built once, by real
commits), an API client on it, and an auditor login for the data's tenant."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager
from starlette.types import ASGIApp
from typer.testing import CliRunner

from app.cli import cli
from app.config import Settings
from app.db import Database
from app.main import create_app
from tests.audit.fixtures import AuditData, build
from tests.support.postgres import DatabaseUrls, PostgresForTests

runner = CliRunner()


@pytest.fixture(scope="session")
def audit_urls(postgres: PostgresForTests) -> DatabaseUrls:
    return postgres.create_app_database("wmaudit")


@pytest.fixture(scope="session")
async def audit_database(audit_urls: DatabaseUrls) -> AsyncIterator[tuple[str, Database]]:
    """The audit data's database as the service logs in to it: its URL and a Database."""
    database = Database.from_url(audit_urls.app, pool_size=5)
    yield audit_urls.app, database
    await database.dispose()


@pytest.fixture(scope="session")
async def audit_data(audit_database: tuple[str, Database], settings: Settings) -> AuditData:
    url, database = audit_database
    return await build(database, url, settings)


@pytest.fixture(scope="session")
async def audit_app(
    audit_database: tuple[str, Database], audit_data: AuditData, settings: Settings
) -> AsyncIterator[ASGIApp]:
    """The service on the audit data, its lifespan running."""
    url, database = audit_database
    app = create_app(settings.model_copy(update={"database_url": url}), database=database)
    async with LifespanManager(app) as manager:
        yield manager.app


@pytest.fixture(scope="session")
async def audit_client(audit_app: ASGIApp) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=audit_app), base_url="http://workmem.test"
    ) as http:
        yield http


@pytest.fixture(scope="session")
async def archives(
    audit_client: httpx.AsyncClient, audit_data: AuditData
) -> dict[str, list[dict[str, Any]]]:
    """The archives of tenant A's agent sessions, as the API lists them."""
    found: dict[str, list[dict[str, Any]]] = {}
    for agent_session_id in (audit_data.billing, audit_data.support):
        response = await audit_client.get(
            f"/v1/sessions/{agent_session_id}/archives", headers=audit_data.tenant.read
        )
        found[agent_session_id] = response.json()["items"]
    return found


def workmem(args: list[str], env: dict[str, str]) -> dict[str, object]:
    result = runner.invoke(cli, args, env=env)
    assert result.exit_code == 0, (result.output, result.exception)
    loaded: dict[str, object] = json.loads(result.output)
    return loaded


@pytest.fixture(scope="session")
def cli_env(
    audit_data: AuditData, audit_urls: DatabaseUrls, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    home: Path = tmp_path_factory.mktemp("audit-home")
    return {
        "DATABASE_URL": audit_data.url,
        "WORKMEM_ADMIN_DATABASE_URL": audit_urls.admin,
        "WORKMEM_HOME": str(home),
    }


@pytest.fixture(scope="session")
def auditor_url(audit_data: AuditData, cli_env: dict[str, str]) -> Iterator[str]:
    """A connection string of an auditor login for tenant A, made by ``workmem auditors``."""
    tenant = str(audit_data.tenant.tenant_id)
    created = workmem(["auditors", "create", "--tenant", tenant], cli_env)
    yield str(created["connection_url"])
    workmem(["auditors", "drop", str(created["login_role"]), "--tenant", tenant], cli_env)
