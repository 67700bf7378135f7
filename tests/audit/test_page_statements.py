"""Statements per page: a fixed number, whatever the length of the agent session, so a long
agent session's pages cost what a short one's do (the timeline is paged, diffs are per archive)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from asgi_lifespan import LifespanManager

from app.config import Settings
from app.db import Database
from app.main import create_app
from app.tenancy.auth import AUTHENTICATOR
from tests.audit.fixtures import AuditData
from tests.audit.pages import sign_in
from tests.support.statements import StatementLog


@pytest.fixture
async def counted(
    audit_data: AuditData, settings: Settings
) -> AsyncIterator[tuple[httpx.AsyncClient, StatementLog]]:
    log = StatementLog()
    database = Database.from_url(audit_data.url, pool_size=2, on_connect=log.install)
    app = create_app(
        settings.model_copy(update={"database_url": audit_data.url}), database=database
    )
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://workmem.test"
        ) as http,
    ):
        AUTHENTICATOR.get(app).ttl_s = 3600.0  # the key's lookup is not what is counted
        await sign_in(http, audit_data.tenant.reader)
        yield http, log
    await database.dispose()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/ui/sessions", 2),
        ("/ui/sessions/{id}", 4),
        ("/ui/sessions/{id}/archives/2", 6),  # the messages its items cite, in one read
        # expand lists the archive's memories too; the agent session names the breadcrumb
        ("/ui/sessions/{id}/archives/2/messages", 6),
        ("/ui/sessions/{id}/search?q=refund", 3),
    ],
)
async def test_statements_per_page(
    counted: tuple[httpx.AsyncClient, StatementLog],
    audit_data: AuditData,
    path: str,
    expected: int,
) -> None:
    http, log = counted
    counts = []
    for agent_session_id in (audit_data.billing, audit_data.support):
        with log.recording() as statements:
            response = await http.get(path.format(id=agent_session_id))
        assert response.status_code == 200, response.text
        counts.append(len(statements))
    assert counts == [expected, expected], "\n".join(statements)
