"""Database work is bounded and its failures say what they are (defect 3): a statement that
waits too long is cancelled by Postgres and answers 503 ``database_timeout``; a deadlock is
``database_conflict``; a server that accepts connections but never answers is ``unavailable``,
and ``/readyz`` says so instead of hanging."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import text

from app.db import Database
from app.errors import DatabaseConflict, DatabaseTimeout
from tests.conftest import AppFactory, TenantKeys
from tests.support.api import create_session
from tests.support.postgres import DatabaseUrls


async def test_a_statement_waiting_past_the_timeout_answers_503_database_timeout(
    own_urls: DatabaseUrls, app_client: AppFactory, tenant: TenantKeys, database: Database
) -> None:
    from app.config import Settings
    from app.db import Bounds

    bounded = Database.from_url(
        own_urls.app,
        bounds=Bounds.from_settings(Settings(db_statement_timeout_s=0.3)),
    )
    from tests.conftest import make_tenant

    keys = await make_tenant(bounded, "slow")
    holder = Database.from_url(own_urls.app)
    try:
        async with app_client(bounded, group_commit=False) as http:
            agent_session_id = await create_session(http, keys)
            held = asyncio.Event()
            release = asyncio.Event()

            async def hold_the_row() -> None:
                async with holder.tenant(keys.tenant_id) as db:
                    await db.execute(
                        text(
                            "SELECT 1 FROM agent_sessions WHERE agent_session_id = :id FOR UPDATE"
                        ),
                        {"id": agent_session_id},
                    )
                    held.set()
                    await release.wait()

            holding = asyncio.create_task(hold_the_row())
            await held.wait()
            response = await http.post(
                f"/v1/sessions/{agent_session_id}/messages",
                json={"role": "user", "content": "x"},
                headers=keys.write,
            )
            release.set()
            await holding
            assert response.status_code == 503, response.text
            assert response.json()["type"] == "database_timeout"
            assert response.headers["retry-after"] == "1"
            after = await http.get(f"/v1/sessions/{agent_session_id}", headers=keys.read)
            assert after.json()["message_count"] == 0, "the cancelled append stored nothing"
    finally:
        await holder.dispose()
        await bounded.dispose()


async def test_a_deadlock_is_reported_as_a_conflict_to_retry(
    database: Database, tenant: TenantKeys, client: httpx.AsyncClient
) -> None:
    first, second = (await create_session(client, tenant), await create_session(client, tenant))
    lock = "SELECT 1 FROM agent_sessions WHERE agent_session_id = :id FOR UPDATE"
    both_hold = asyncio.Barrier(2)

    async def lock_in_order(one: str, other: str) -> None:
        async with database.tenant(tenant.tenant_id) as db:
            await db.execute(text(lock), {"id": one})
            await both_hold.wait()
            await db.execute(text(lock), {"id": other})

    results = await asyncio.gather(
        lock_in_order(first, second), lock_in_order(second, first), return_exceptions=True
    )
    errors = [result for result in results if isinstance(result, BaseException)]
    assert len(errors) == 1, results
    assert isinstance(errors[0], DatabaseConflict)
    assert errors[0].type == "database_conflict"
    assert not isinstance(errors[0], DatabaseTimeout)


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections and never answers (a frozen database)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port: int = listener.getsockname()[1]
    yield port
    listener.close()


async def test_a_server_that_never_answers_is_unavailable_and_not_ready(
    silent_server: int, app_client: AppFactory
) -> None:
    url = f"postgresql+psycopg://workmem_app@127.0.0.1:{silent_server}/workmem"
    database = Database.from_url(url, pool_size=1)
    try:
        async with app_client(database) as http:
            key = {"Authorization": "Bearer wm_abcdefgh_" + "a" * 40}
            listed = await http.get("/v1/sessions", headers=key)
            assert listed.status_code == 503
            assert listed.json()["type"] == "unavailable"
            assert "retry-after" in listed.headers
            ready = await http.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["type"] == "not_ready"
            appended = await http.post(
                f"/v1/sessions/{uuid.uuid4()}/messages",
                json={"role": "user", "content": "x"},
                headers=key,
            )
            assert appended.status_code == 503
    finally:
        await database.dispose()
