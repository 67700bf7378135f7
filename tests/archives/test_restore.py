"""``POST /v1/sessions/{id}/working-memory:restore``: what it refuses (and that nothing is
stored then), and the rows it writes (an empty-range archive, seven ``RESTORE`` rows, the
``wm_restores`` view; ``wm_guard_events`` leaves them out)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.db import Database
from tests.audit.documented import documented_queries, for_driver
from tests.conftest import TenantKeys
from tests.support.api import append, commit, create_session, user


async def _state(client: httpx.AsyncClient, keys: TenantKeys, session: str) -> dict[str, Any]:
    body: dict[str, Any] = (await client.get(f"/v1/sessions/{session}", headers=keys.read)).json()
    return body


async def _restore(
    client: httpx.AsyncClient, keys: TenantKeys, session: str, body: object
) -> httpx.Response:
    return await client.post(
        f"/v1/sessions/{session}/working-memory:restore", json=body, headers=keys.write
    )


async def _session_with_archives(client: httpx.AsyncClient, keys: TenantKeys, count: int) -> str:
    session = await create_session(client, keys)
    for number in range(count):
        await append(client, keys, session, [user(f"Decision {number}: use tool {number}.")])
        done = await commit(client, keys, session, keep_recent_count=0, wait=True)
        assert done.json()["status"] == "done", done.text
    return session


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"archive_seq": 0},
        {"archive_seq": -1},
        {"archive_seq": 2**31},
        {"archive_seq": "1"},
        {"archive_seq": 1.0},
        {"archive_seq": None},
        {"archive_seq": 1, "extra": True},
        [1],
    ],
)
async def test_invalid_bodies_are_422_and_store_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys, body: object
) -> None:
    session = await _session_with_archives(client, tenant, 1)
    response = await _restore(client, tenant, session, body)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert (await _state(client, tenant, session))["archive_count"] == 1


async def test_bounds_of_archive_seq(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    session = await _session_with_archives(client, tenant, 2)
    missing = await _restore(client, tenant, session, {"archive_seq": 3})
    assert missing.status_code == 404, missing.text
    assert (await _state(client, tenant, session))["archive_count"] == 2
    # At the newest archive: allowed (a version equal to the current one, marked unchanged).
    same = await _restore(client, tenant, session, {"archive_seq": 2})
    assert same.status_code == 201, same.text
    assert {d["details"]["changed"] for d in same.json()["decisions"]} == {False}
    first = await _restore(client, tenant, session, {"archive_seq": 1})
    assert first.status_code == 201, first.text
    assert first.json()["archive_seq"] == 4
    assert (await _state(client, tenant, session))["archive_count"] == 4


async def test_a_missing_session_is_404(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    response = await _restore(
        client, tenant, "00000000-0000-0000-0000-000000000000", {"archive_seq": 1}
    )
    assert response.status_code == 404


async def test_an_unfinished_archive_refuses_a_restore(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    session = await _session_with_archives(client, tenant, 1)
    await append(client, tenant, session, [user("more")])
    accepted = await commit(client, tenant, session, keep_recent_count=0)
    assert accepted.status_code == 202
    # Archive 2 is pending: it has no working memory, and it blocks restoring archive 1.
    pending = await _restore(client, tenant, session, {"archive_seq": 2})
    assert pending.status_code == 409, pending.text
    blocked = await _restore(client, tenant, session, {"archive_seq": 1})
    assert blocked.status_code == 409, blocked.text
    assert "pending or running" in blocked.json()["detail"]
    assert (await _state(client, tenant, session))["archive_count"] == 2


async def test_a_reader_may_not_restore(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    session = await _session_with_archives(client, tenant, 1)
    response = await client.post(
        f"/v1/sessions/{session}/working-memory:restore",
        json={"archive_seq": 1},
        headers=tenant.read,
    )
    assert response.status_code == 403


async def test_restore_rows_in_sql(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    session = await _session_with_archives(client, tenant, 2)
    restored = await _restore(client, tenant, session, {"archive_seq": 1})
    assert restored.status_code == 201, restored.text
    async with database.tenant(tenant.tenant_id) as db:
        archive = (
            await db.execute(
                text(
                    "SELECT start_seq, end_seq, status, generator FROM archives"
                    " WHERE agent_session_id = :id AND archive_seq = 3"
                ),
                {"id": session},
            )
        ).one()
        assert tuple(archive) == (3, 2, "done", "restore")
        copied = (
            await db.execute(
                text(
                    "SELECT count(*) FROM wm_section_versions n JOIN wm_section_versions o"
                    " USING (tenant_id, agent_session_id, section)"
                    " WHERE n.agent_session_id = :id AND n.archive_seq = 3"
                    " AND o.archive_seq = 1 AND n.content_sha256 = o.content_sha256"
                    " AND n.sources = o.sources AND n.generator = 'restore'"
                ),
                {"id": session},
            )
        ).scalar_one()
        assert copied == 7
        restores = (
            await db.execute(
                text(
                    "SELECT restored_from_archive, replaced_archive, restored_by_key IS NOT NULL"
                    " FROM wm_restores WHERE agent_session_id = :id"
                ),
                {"id": session},
            )
        ).all()
        assert {tuple(row) for row in restores} == {(1, 2, True)}
        assert len(restores) == 7
        guard_events = (
            await db.execute(
                text(
                    "SELECT count(*) FROM wm_guard_events"
                    " WHERE agent_session_id = :id AND archive_seq = 3"
                ),
                {"id": session},
            )
        ).scalar_one()
        assert guard_events == 0


async def test_the_documented_restores_query(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    session = await _session_with_archives(client, tenant, 3)
    assert (await _restore(client, tenant, session, {"archive_seq": 1})).status_code == 201
    assert (await _restore(client, tenant, session, {"archive_seq": 3})).status_code == 201
    sql = documented_queries()["restores"]
    async with database.tenant(tenant.tenant_id) as db:
        connection = await db.connection()
        result = await connection.exec_driver_sql(for_driver(sql), {"agent_session_id": session})
        rows = [dict(row._mapping) for row in result.all()]
    assert [
        (row["archive_seq"], row["restored_from_archive"], row["replaced_archive"]) for row in rows
    ] == [(4, 1, 3), (5, 3, 4)]
    # Each commit added one decision, so going back to 1 and forward to 3 changes the same
    # sections, and every restore names the key that asked.
    assert rows[0]["sections_changed"] == rows[1]["sections_changed"] > 0
    assert len({row["restored_by_key"] for row in rows}) == 1
    assert rows[0]["restored_at"] <= rows[1]["restored_at"]
