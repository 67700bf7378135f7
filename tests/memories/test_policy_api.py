"""Memory policy through ``/v1``: stored on an agent session and per user, refused whole when
invalid, and obeyed by the archive job (working memory, long-term extraction, categories), the
agent session's fields over its user's over everything on."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.db import Database
from tests.conftest import TenantKeys
from tests.memories.helpers import memories, rows, state, user_key
from tests.support.api import append, commit, create_session

FACTS = (
    "I prefer green tea to coffee.",
    "Last Saturday I ran the Berlin marathon with my brother Tom.",
    "My name is Dana and I live in Lisbon.",
)


async def _session(client: httpx.AsyncClient, tenant: TenantKeys, **body: Any) -> dict[str, Any]:
    response = await client.post("/v1/sessions", json=body, headers=tenant.write)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def _count(database: Database, table: str, tenant: TenantKeys) -> int:
    found = await rows(database, f"SELECT count(*) AS n FROM {table}", tenant_id=tenant.tenant_id)  # noqa: S608 - a table name of this test
    return int(found[0]["n"])


async def _put_user(
    client: httpx.AsyncClient, tenant: TenantKeys, user_id: str, body: object, key: str = ""
) -> httpx.Response:
    return await client.put(
        f"/v1/users/{user_id}/memory-policy",
        json=body,
        headers=TenantKeys.headers(key or tenant.admin),
    )


async def test_a_session_keeps_the_policy_it_was_created_with(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    created = await _session(
        client,
        tenant,
        user_id="dana",
        memory_policy={"working_memory": False, "memory_types": ["event", "profile", "event"]},
    )
    expected = {
        "working_memory": False,
        "long_term_extraction": None,
        "memory_types": ["event", "profile"],
    }
    assert created["memory_policy"] == expected
    read = await client.get(f"/v1/sessions/{created['id']}", headers=tenant.read)
    assert read.json()["memory_policy"] == expected
    plain = await _session(client, tenant, user_id="dana")
    assert plain["memory_policy"] is None


@pytest.mark.parametrize(
    ("policy", "where"),
    [
        ("off", ["body", "memory_policy"]),
        ({"working_memory": "false"}, ["body", "memory_policy", "working_memory"]),
        ({"working_memory": 0}, ["body", "memory_policy", "working_memory"]),
        ({"memory_types": []}, ["body", "memory_policy", "memory_types"]),
        ({"memory_types": ["opinion"]}, ["body", "memory_policy", "memory_types", 0]),
        ({"workingMemory": False}, ["body", "memory_policy", "workingMemory"]),
    ],
)
async def test_a_bad_policy_is_a_422_and_nothing_is_stored(
    client: httpx.AsyncClient,
    tenant: TenantKeys,
    database: Database,
    policy: object,
    where: list[object],
) -> None:
    before = await _count(database, "agent_sessions", tenant)
    created = await client.post(
        "/v1/sessions", json={"user_id": "dana", "memory_policy": policy}, headers=tenant.write
    )
    assert created.status_code == 422, created.text
    assert created.headers["content-type"] == "application/problem+json"
    assert created.json()["errors"][0]["loc"] == where
    assert await _count(database, "agent_sessions", tenant) == before

    session = await _session(client, tenant, memory_policy={"working_memory": True})
    patched = await client.patch(
        f"/v1/sessions/{session['id']}", json={"memory_policy": policy}, headers=tenant.write
    )
    assert patched.status_code == 422, patched.text
    read = await client.get(f"/v1/sessions/{session['id']}", headers=tenant.read)
    assert read.json()["memory_policy"]["working_memory"] is True

    users_before = await _count(database, "user_memory_policies", tenant)
    put = await _put_user(client, tenant, "dana", policy)
    assert put.status_code == 422, put.text
    assert await _count(database, "user_memory_policies", tenant) == users_before


async def test_patch_replaces_or_removes_the_sessions_own_policy(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    session = await _session(client, tenant, memory_policy={"working_memory": False})
    path = f"/v1/sessions/{session['id']}"
    replaced = await client.patch(
        path, json={"memory_policy": {"long_term_extraction": False}}, headers=tenant.write
    )
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["memory_policy"] == {
        "working_memory": None,
        "long_term_extraction": False,
        "memory_types": None,
    }
    unchanged = await client.patch(path, json={}, headers=tenant.write)
    assert unchanged.json()["memory_policy"]["long_term_extraction"] is False
    removed = await client.patch(path, json={"memory_policy": None}, headers=tenant.write)
    assert removed.json()["memory_policy"] is None
    refused = await client.patch(path, json={"memory_policy": None}, headers=tenant.read)
    assert refused.status_code == 403


async def test_only_a_tenant_admin_sets_a_users_default(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    missing = await client.get(
        "/v1/users/erin/memory-policy", headers=TenantKeys.headers(tenant.admin)
    )
    assert missing.status_code == 404, missing.text
    assert (await _put_user(client, tenant, "erin", {}, tenant.writer)).status_code == 403
    bound = await user_key(database, tenant, "erin")
    assert (await _put_user(client, tenant, "erin", {}, bound)).status_code == 403
    put = await _put_user(client, tenant, "erin", {"long_term_extraction": False})
    assert put.status_code == 200, put.text
    read = await client.get(
        "/v1/users/erin/memory-policy", headers=TenantKeys.headers(tenant.admin)
    )
    body = read.json()
    assert body["user_id"] == "erin"
    assert body["memory_policy"] == {
        "working_memory": None,
        "long_term_extraction": False,
        "memory_types": None,
    }
    assert body["updated_at"]
    again = await _put_user(client, tenant, "erin", {"working_memory": False})
    assert again.json()["memory_policy"]["long_term_extraction"] is None
    assert await _count(database, "user_memory_policies", tenant) == 1


async def _working_memory(client: httpx.AsyncClient, tenant: TenantKeys, sid: str) -> int:
    """The archive the agent session's working memory comes from (0: none)."""
    response = await client.get(f"/v1/sessions/{sid}/working-memory", headers=tenant.read)
    assert response.status_code == 200, response.text
    seq: int = response.json()["archive_seq"]
    return seq


async def test_working_memory_off_archives_without_one_and_keeps_the_messages_raw(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = (await _session(client, tenant, user_id="ana", memory_policy={"working_memory": False}))[
        "id"
    ]
    archive = await state(client, tenant, sid, *FACTS)
    assert archive["status"] == "done"
    assert archive["generator"] is None
    assert archive["memories"]["added"] == 3, archive["memories"]
    assert await _working_memory(client, tenant, sid) == 0
    context = await client.get(f"/v1/sessions/{sid}/context", headers=tenant.read)
    sent = [m.get("content") for m in context.json()["messages"]]
    assert all(fact in sent for fact in FACTS), sent
    # Turned back on: the next working memory covers the archive made without one, and its
    # memories are not extracted twice.
    patched = await client.patch(
        f"/v1/sessions/{sid}", json={"memory_policy": None}, headers=tenant.write
    )
    assert patched.status_code == 200
    second = await state(client, tenant, sid, "My favorite food is grilled sardines.")
    assert second["generator"] is not None
    assert second["memories"]["added"] == 1, second["memories"]
    working = await client.get(f"/v1/sessions/{sid}/working-memory", headers=tenant.read)
    assert working.json()["archive_seq"] == 2
    assert working.json()["covered_start_seq"] == 1
    assert "Lisbon" in working.text
    context = await client.get(f"/v1/sessions/{sid}/context", headers=tenant.read)
    assert not any(m.get("content") in FACTS for m in context.json()["messages"])
    listed = await memories(client, tenant.reader, user_id="ana")
    assert len(listed) == 4


async def test_extraction_off_and_allowed_types(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    off = (
        await _session(client, tenant, user_id="ben", memory_policy={"long_term_extraction": False})
    )["id"]
    archive = await state(client, tenant, off, *FACTS)
    assert archive["memories"] is None
    assert archive["generator"] is not None
    assert await _working_memory(client, tenant, off) == 1
    assert await memories(client, tenant.reader, user_id="ben") == []

    typed = (
        await _session(client, tenant, user_id="cy", memory_policy={"memory_types": ["profile"]})
    )["id"]
    archive = await state(client, tenant, typed, *FACTS)
    assert archive["memories"]["added"] == 1
    assert archive["memories"]["skipped"]["not_allowed"] == 2
    assert [m["category"] for m in await memories(client, tenant.reader, user_id="cy")] == [
        "profile"
    ]


async def test_the_session_overrides_its_user_which_overrides_everything_on(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    put = await _put_user(
        client, tenant, "dee", {"working_memory": False, "memory_types": ["preference"]}
    )
    assert put.status_code == 200, put.text
    inherits = await create_session(client, tenant, user_id="dee")
    archive = await state(client, tenant, inherits, *FACTS)
    assert archive["generator"] is None
    assert archive["memories"]["added"] == 1
    overrides = (
        await _session(client, tenant, user_id="dee", memory_policy={"working_memory": True})
    )["id"]
    await append(client, tenant, overrides, [{"role": "user", "content": FACTS[2]}])
    response = await commit(client, tenant, overrides, keep_recent_count=0, wait=True)
    archive = response.json()["archive"]
    assert archive["generator"] is not None
    # memory_types still comes from the user: the profile fact is not allowed.
    assert archive["memories"]["added"] == 0
    assert archive["memories"]["skipped"]["not_allowed"] == 1
    other_user = await create_session(client, tenant, user_id="eve")
    archive = await state(client, tenant, other_user, *FACTS)
    assert archive["generator"] is not None
    assert archive["memories"]["added"] == 3


async def test_erasing_a_user_removes_their_default(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    assert (await _put_user(client, tenant, "fay", {"working_memory": False})).status_code == 200
    admin = TenantKeys.headers(tenant.admin)
    erased = await client.delete("/v1/users/fay", headers=admin)
    assert erased.status_code == 200, erased.text
    assert (await client.get("/v1/users/fay/memory-policy", headers=admin)).status_code == 404
