"""Agent sessions and messages over HTTP: create, list, get, delete, append, batch, read."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import TenantKeys
from tests.support.api import create_session


async def test_create_append_and_read_back(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    agent_session_id = await create_session(client, tenant, external_id="conv-1", user_id="u1")

    first = await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "user", "content": "Please fix app/main.py", "metadata": {"k": 1}},
        headers=tenant.write,
    )
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["message"]["seq"] == 1
    assert body["message"]["turn"] == 1
    assert body["message"]["token_count"] > 0
    assert body["message"]["message"] == {"role": "user", "content": "Please fix app/main.py"}
    assert body["live_message_count"] == 1

    batch = await client.post(
        f"/v1/sessions/{agent_session_id}/messages:batch",
        json={
            "messages": [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "print('x')"},
                {"role": "assistant", "content": "Done."},
            ]
        },
        headers=tenant.write,
    )
    assert batch.status_code == 201, batch.text
    assert [m["seq"] for m in batch.json()["messages"]] == [2, 3, 4]
    assert batch.json()["messages"][0]["message"]["content"] is None

    page = await client.get(
        f"/v1/sessions/{agent_session_id}/messages", params={"after_seq": 1}, headers=tenant.read
    )
    assert page.status_code == 200
    items = page.json()["items"]
    assert [m["seq"] for m in items] == [2, 3, 4]
    assert items[1]["message"]["tool_call_id"] == "call_1"
    assert page.json()["next_after_seq"] is None

    got = await client.get(f"/v1/sessions/{agent_session_id}", headers=tenant.read)
    assert got.status_code == 200
    read = got.json()
    assert read["message_count"] == 4
    assert read["live_message_count"] == 4
    assert read["external_id"] == "conv-1"
    assert (
        read["total_tokens"]
        == sum(m["token_count"] for m in items) + body["message"]["token_count"]
    )


async def test_external_id_is_unique_per_tenant(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    await create_session(client, tenant, external_id="same")
    again = await client.post("/v1/sessions", json={"external_id": "same"}, headers=tenant.write)
    assert again.status_code == 409
    assert again.headers["content-type"] == "application/problem+json"
    await create_session(client, other_tenant, external_id="same")


async def test_list_filters_and_paginates(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    ids = [await create_session(client, tenant, agent_id="a1") for _ in range(5)]
    await create_session(client, tenant, agent_id="a2")
    seen: list[str] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"agent_id": "a1", "limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = await client.get("/v1/sessions", params=params, headers=tenant.read)
        assert page.status_code == 200
        seen += [item["id"] for item in page.json()["items"]]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids)
    bad = await client.get("/v1/sessions", params={"cursor": "!!"}, headers=tenant.read)
    assert bad.status_code == 422


async def test_delete_removes_everything(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    agent_session_id = await create_session(client, tenant)
    await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "user", "content": "hi"},
        headers=tenant.write,
    )
    deleted = await client.delete(f"/v1/sessions/{agent_session_id}", headers=tenant.write)
    assert deleted.status_code == 204
    assert (
        await client.get(f"/v1/sessions/{agent_session_id}", headers=tenant.read)
    ).status_code == 404
    again = await client.delete(f"/v1/sessions/{agent_session_id}", headers=tenant.write)
    assert again.status_code == 404
