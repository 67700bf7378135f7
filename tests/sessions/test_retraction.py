"""Retracting live messages: recorded, never deleted; the context and the next working memory
leave them out; archived messages cannot be retracted."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import TenantKeys
from tests.support.api import create_session


async def append(
    client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str, *contents: str
) -> None:
    batch = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": content}
        for n, content in enumerate(contents)
    ]
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages:batch",
        json={"messages": batch},
        headers=keys.write,
    )
    assert response.status_code == 201, response.text


async def retract(
    client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str, **body: Any
) -> httpx.Response:
    return await client.post(
        f"/v1/sessions/{agent_session_id}/messages:retract", json=body, headers=keys.write
    )


async def context_contents(
    client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str
) -> list[str]:
    response = await client.get(f"/v1/sessions/{agent_session_id}/context", headers=keys.read)
    assert response.status_code == 200, response.text
    return [message["content"] for message in response.json()["messages"]]


async def test_the_newest_live_message_is_retracted_and_left_out_of_the_context(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    await append(client, tenant, agent_session_id, "one", "two", "three")

    first = await retract(client, tenant, agent_session_id)
    assert first.status_code == 200, first.text
    assert first.json()["retracted"]["seq"] == 3
    assert first.json()["retracted"]["message"] == {"role": "user", "content": "three"}
    assert first.json()["retracted_at"] is not None
    assert await context_contents(client, tenant, agent_session_id) == ["one", "two"]

    second = await retract(client, tenant, agent_session_id)
    assert second.json()["retracted"]["seq"] == 2
    assert await context_contents(client, tenant, agent_session_id) == ["one"]

    # The messages stay as stored: the history still lists all three.
    listed = await client.get(f"/v1/sessions/{agent_session_id}/messages", headers=tenant.read)
    assert [item["seq"] for item in listed.json()["items"]] == [1, 2, 3]


async def test_a_named_seq_is_retracted_once(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    agent_session_id = await create_session(client, tenant)
    await append(client, tenant, agent_session_id, "one", "two", "three")
    once = await retract(client, tenant, agent_session_id, seq=2)
    again = await retract(client, tenant, agent_session_id, seq=2)
    assert once.json()["retracted"]["seq"] == again.json()["retracted"]["seq"] == 2
    assert once.json()["retracted_at"] == again.json()["retracted_at"]
    assert await context_contents(client, tenant, agent_session_id) == ["one", "three"]
    # Without a seq, the newest live message not retracted yet.
    newest = await retract(client, tenant, agent_session_id)
    assert newest.json()["retracted"]["seq"] == 3


async def test_what_cannot_be_retracted(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    nothing = await retract(client, tenant, agent_session_id)
    assert nothing.status_code == 200
    assert nothing.json() == {"retracted": None, "retracted_at": None}

    await append(client, tenant, agent_session_id, "one", "two", "three")
    committed = await client.post(
        f"/v1/sessions/{agent_session_id}/commit",
        json={"keep_recent_count": 1, "wait": True},
        headers=tenant.write,
    )
    assert committed.json()["status"] == "done"
    archived = await retract(client, tenant, agent_session_id, seq=2)
    assert archived.status_code == 409
    assert archived.json()["type"] == "conflict"
    assert (await retract(client, tenant, agent_session_id, seq=4)).status_code == 404
    assert (await retract(client, tenant, agent_session_id, seq=0)).status_code == 422
    live = await retract(client, tenant, agent_session_id)
    assert live.json()["retracted"]["seq"] == 3
    # Only archived messages are left: nothing live to retract.
    assert (await retract(client, tenant, agent_session_id)).json()["retracted"] is None

    reader = await client.post(
        f"/v1/sessions/{agent_session_id}/messages:retract", json={}, headers=tenant.read
    )
    assert reader.status_code == 403
    stranger = await client.post(
        f"/v1/sessions/{agent_session_id}/messages:retract", json={}, headers=other_tenant.write
    )
    assert stranger.status_code == 404


async def test_the_next_working_memory_leaves_retracted_messages_out(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    await append(
        client,
        tenant,
        agent_session_id,
        "Please fix app/billing/invoice.py.",
        "Looking at app/billing/invoice.py now.",
        "Also delete app/legacy/cron.py.",
    )
    withdrawn = await retract(client, tenant, agent_session_id)
    assert withdrawn.json()["retracted"]["seq"] == 3
    committed = await client.post(
        f"/v1/sessions/{agent_session_id}/commit",
        json={"keep_recent_count": 0, "wait": True},
        headers=tenant.write,
    )
    body = committed.json()
    assert body["status"] == "done", body
    files = body["working_memory"]["sections"]["Files & Context"]
    assert "app/billing/invoice.py" in files
    assert "app/legacy/cron.py" not in body["working_memory"]["markdown"]
