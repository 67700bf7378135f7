"""Sessions through /api/v1 (DESIGN 12): create, list, get (and auto-create), delete, and the
session ids a client may choose."""

from __future__ import annotations

import uuid

import httpx
import pytest

from app.compat.openviking.ids import is_session_id
from tests.compat.helpers import API, append, commit, failed, ok, user, validation_locs
from tests.conftest import TenantKeys


async def test_create_a_session_with_the_clients_id(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    created = ok(
        await client.post(f"{API}/sessions", json={"session_id": "conv-1"}, headers=tenant.write)
    )
    assert created == {
        "session_id": "conv-1",
        "uri": "viking://session/conv-1",
        "user": {"account_id": str(tenant.tenant_id), "user_id": "default"},
        "memory_policy": None,
        "auto_commit_policy": None,
    }
    listed = await client.get("/v1/sessions", params={"external_id": "conv-1"}, headers=tenant.read)
    [agent_session] = listed.json()["items"]
    assert agent_session["keep_recent_count"] == 0

    again = await client.post(
        f"{API}/sessions", json={"session_id": "conv-1"}, headers=tenant.write
    )
    assert "conv-1" in failed(again, "CONFLICT", 409)["message"]


async def test_options_openviking_clients_send_are_accepted_and_ignored(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    body = {
        "session_id": "with-options",
        "auto_commit_policy": {"message_count_threshold": 25},
        "memory_policy": {"working_memory": {"enabled": True}},
        "telemetry": True,
    }
    created = ok(await client.post(f"{API}/sessions", json=body, headers=tenant.write))
    assert created["session_id"] == "with-options"
    assert created["auto_commit_policy"] is None
    # The memory policy is not ignored: it is the session's own.
    assert created["memory_policy"] == {"working_memory": True}


async def test_config_changes_the_memory_policy_and_refuses_a_bad_one(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    ok(await client.post(f"{API}/sessions", json={"session_id": "conf"}, headers=tenant.write))
    path = f"{API}/sessions/conf/config"
    changed = ok(
        await client.patch(
            path,
            json={"memory_policy": {"self": {"enabled": False}}, "telemetry": True},
            headers=tenant.write,
        )
    )
    assert changed == {
        "session_id": "conf",
        "memory_policy": {"long_term_extraction": False},
        "auto_commit_policy": None,
    }
    refused = await client.patch(
        path, json={"memory_policy": {"memory_types": ["opinions"]}}, headers=tenant.write
    )
    assert validation_locs(failed(refused, "INVALID_ARGUMENT", 400)) == [["body", "memory_policy"]]
    kept = ok(await client.get(f"{API}/sessions/conf", headers=tenant.read))
    assert kept["memory_policy"] == {"long_term_extraction": False}
    unchanged = ok(await client.patch(path, json={}, headers=tenant.write))
    assert unchanged["memory_policy"] == {"long_term_extraction": False}
    removed = ok(await client.patch(path, json={"memory_policy": None}, headers=tenant.write))
    assert removed["memory_policy"] is None
    missing = await client.patch(
        f"{API}/sessions/nope/config", json={"memory_policy": None}, headers=tenant.write
    )
    failed(missing, "NOT_FOUND", 404)
    read_only = await client.patch(path, json={}, headers=tenant.read)
    failed(read_only, "PERMISSION_DENIED", 403)


async def test_create_without_an_id_generates_one(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    first = ok(await client.post(f"{API}/sessions", headers=tenant.write))
    second = ok(await client.post(f"{API}/sessions", json={}, headers=tenant.write))
    assert first["session_id"] != second["session_id"]
    assert is_session_id(first["session_id"])
    read = ok(await client.get(f"{API}/sessions/{first['session_id']}", headers=tenant.read))
    assert read["total_message_count"] == 0


@pytest.mark.parametrize("session_id", ["a/b", "a b", "x" * 256, "", "ü", ".", ".."])
async def test_a_session_id_outside_the_pattern_stores_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys, session_id: str
) -> None:
    response = await client.post(
        f"{API}/sessions", json={"session_id": session_id}, headers=tenant.write
    )
    assert validation_locs(failed(response, "INVALID_ARGUMENT", 400)) == [["body", "session_id"]]
    assert ok(await client.get(f"{API}/sessions", headers=tenant.read)) == []


@pytest.mark.parametrize(
    "path",
    [
        "/sessions/" + "x" * 256,
        "/sessions/a%20b/context",
        "/sessions/%C3%BC/messages",
        # A normalising HTTP client cannot address these, so none may be created.
        "/sessions/%2E/messages",
        "/sessions/%2E%2E/messages",
        "/sessions/%2E%2E?auto_create=true",
    ],
)
async def test_a_session_id_in_the_path_outside_the_pattern(
    client: httpx.AsyncClient, tenant: TenantKeys, path: str
) -> None:
    method = "POST" if path.endswith("messages") else "GET"
    response = await client.request(method, API + path, json=user("hi"), headers=tenant.write)
    assert validation_locs(failed(response, "INVALID_ARGUMENT", 400)) == [["path", "session_id"]]
    assert ok(await client.get(f"{API}/sessions", headers=tenant.read)) == []


@pytest.mark.parametrize("path", ["/sessions/a%2Fb", "/sessions/a%2fb/messages", "/sessions/a%5Cb"])
async def test_an_encoded_path_separator_is_refused_not_routed(
    client: httpx.AsyncClient, tenant: TenantKeys, path: str
) -> None:
    ok(await client.post(f"{API}/sessions", json={"session_id": "a"}, headers=tenant.write))
    method = "POST" if path.endswith("messages") else "GET"
    response = await client.request(method, API + path, json=user("hi"), headers=tenant.write)
    assert "'/'" in failed(response, "INVALID_ARGUMENT", 400)["message"]
    assert (
        ok(await client.get(f"{API}/sessions/a", headers=tenant.read))["total_message_count"] == 0
    )


async def test_get_reports_live_and_total_messages_and_commits(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    await append(client, tenant.write, "counted", user("one"), user("two"), user("three"))
    before = ok(await client.get(f"{API}/sessions/counted", headers=tenant.read))
    # A session created here has OpenViking's keep window of 0: every message is pending.
    assert before["pending_tokens"] > 0
    assert (before["message_count"], before["total_message_count"]) == (3, 3)
    await commit(client, tenant.write, "counted", keep=1)
    after = ok(await client.get(f"{API}/sessions/counted", headers=tenant.read))
    assert {key: after[key] for key in ("message_count", "total_message_count")} == {
        "message_count": 1,
        "total_message_count": 3,
    }
    assert (after["commit_count"], after["keep_recent_count"], after["pending_tokens"]) == (1, 1, 0)
    assert after["memories_extracted"] == {"total": 0}
    assert after["user"] == {"account_id": str(tenant.tenant_id), "user_id": "default"}
    assert after["uri"] == "viking://session/counted"
    assert set(after) >= {"session_id", "created_at", "updated_at", "auto_commit_policy"}


async def test_get_of_a_missing_session(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    error = failed(
        await client.get(f"{API}/sessions/nobody", headers=tenant.read), "NOT_FOUND", 404
    )
    assert error["details"] == {"resource": "nobody", "type": "session"}
    assert error["message"] == "Session nobody not found"


async def test_get_with_auto_create(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    path = f"{API}/sessions/made-on-read"
    refused = await client.get(path, params={"auto_create": "true"}, headers=tenant.read)
    failed(refused, "PERMISSION_DENIED", 403)
    failed(await client.get(path, headers=tenant.read), "NOT_FOUND", 404)
    made = ok(await client.get(path, params={"auto_create": "true"}, headers=tenant.write))
    assert (made["session_id"], made["total_message_count"], made["keep_recent_count"]) == (
        "made-on-read",
        0,
        0,
    )
    assert ok(await client.get(path, params={"auto_create": "true"}, headers=tenant.read)) == made


async def test_list_shows_the_sessions_a_client_named_and_pages(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    unnamed = await client.post("/v1/sessions", json={}, headers=tenant.write)
    assert unnamed.status_code == 201
    for name in ("first", "second", "third"):
        ok(await client.post(f"{API}/sessions", json={"session_id": name}, headers=tenant.write))
    await append(client, tenant.write, "second", user("hello"))
    listed = ok(await client.get(f"{API}/sessions", headers=tenant.read))
    assert [item["session_id"] for item in listed] == ["first", "second", "third"]
    second = listed[1]
    assert {key: second[key] for key in ("uri", "is_dir", "message_count", "commit_count")} == {
        "uri": "viking://session/second",
        "is_dir": True,
        "message_count": 1,
        "commit_count": 0,
    }

    page = await client.get(f"{API}/sessions", params={"limit": 2}, headers=tenant.read)
    assert [item["session_id"] for item in ok(page)] == ["first", "second"]
    rest = await client.get(
        f"{API}/sessions",
        params={"limit": 2, "cursor": page.headers["X-Next-Cursor"]},
        headers=tenant.read,
    )
    assert [item["session_id"] for item in ok(rest)] == ["third"]
    assert "X-Next-Cursor" not in rest.headers
    bad = await client.get(f"{API}/sessions", params={"limit": 1001}, headers=tenant.read)
    assert validation_locs(failed(bad, "INVALID_ARGUMENT", 400)) == [["query", "limit"]]


async def test_delete_a_session(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await append(client, tenant.write, "doomed", user("forget me"))
    deleted = ok(await client.delete(f"{API}/sessions/doomed", headers=tenant.write))
    assert deleted == {"session_id": "doomed"}
    failed(await client.get(f"{API}/sessions/doomed", headers=tenant.read), "NOT_FOUND", 404)
    listed = await client.get("/v1/sessions", params={"external_id": "doomed"}, headers=tenant.read)
    assert listed.json()["items"] == []
    again = await client.delete(f"{API}/sessions/doomed", headers=tenant.write)
    failed(again, "NOT_FOUND", 404)
    read_only = await client.delete(f"{API}/sessions/{uuid.uuid4()}", headers=tenant.read)
    failed(read_only, "PERMISSION_DENIED", 403)
