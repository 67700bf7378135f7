"""Idempotency-Key on appends, batches and commits: a retry gets the first answer byte for byte
and stores nothing twice; another request under the same key is a 422 (defect 6)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest

from app.db import Database
from tests.conftest import AppFactory, TenantKeys, make_tenant
from tests.support.api import create_session

MESSAGE = {"role": "user", "content": "fix app/main.py"}
BATCH = {"messages": [MESSAGE, {"role": "assistant", "content": "on it"}]}


def keyed(keys: TenantKeys, key: str) -> dict[str, str]:
    return {**keys.write, "Idempotency-Key": key}


async def message_count(http: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str) -> int:
    read = await http.get(f"/v1/sessions/{agent_session_id}", headers=keys.read)
    count: int = read.json()["message_count"]
    return count


@pytest.mark.parametrize("group_commit", [True, False])
@pytest.mark.parametrize(
    ("path", "body", "added"), [("messages", MESSAGE, 1), ("messages:batch", BATCH, 2)]
)
async def test_a_retried_append_gets_the_first_answer_and_stores_nothing_twice(
    database: Database,
    app_client: AppFactory,
    tenant: TenantKeys,
    group_commit: bool,
    path: str,
    body: dict[str, Any],
    added: int,
) -> None:
    async with app_client(database, group_commit=group_commit) as http:
        agent_session_id = await create_session(http, tenant)
        url = f"/v1/sessions/{agent_session_id}/{path}"
        key = str(uuid.uuid4())
        first = await http.post(url, json=body, headers=keyed(tenant, key))
        assert first.status_code == 201, first.text
        assert "idempotent-replayed" not in first.headers
        for _ in range(3):
            retry = await http.post(url, json=body, headers=keyed(tenant, key))
            assert retry.status_code == 201
            assert retry.content == first.content, "byte for byte"
            assert retry.headers["idempotent-replayed"] == "true"
        assert await message_count(http, tenant, agent_session_id) == added
        fresh = await http.post(url, json=body, headers=keyed(tenant, str(uuid.uuid4())))
        assert fresh.status_code == 201
        assert await message_count(http, tenant, agent_session_id) == 2 * added


async def test_the_same_key_for_another_request_is_a_422(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    url = f"/v1/sessions/{agent_session_id}/messages"
    key = str(uuid.uuid4())
    assert (await client.post(url, json=MESSAGE, headers=keyed(tenant, key))).status_code == 201
    other_body = await client.post(
        url, json={"role": "user", "content": "another"}, headers=keyed(tenant, key)
    )
    assert other_body.status_code == 422, other_body.text
    assert other_body.json()["type"] == "idempotency_key_reused"
    other_route = await client.post(
        f"/v1/sessions/{agent_session_id}/commit", json={}, headers=keyed(tenant, key)
    )
    assert other_route.status_code == 422
    assert await message_count(client, tenant, agent_session_id) == 1


async def test_keys_are_per_tenant(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    key = str(uuid.uuid4())
    for keys in (tenant, other_tenant):
        agent_session_id = await create_session(client, keys)
        response = await client.post(
            f"/v1/sessions/{agent_session_id}/messages", json=MESSAGE, headers=keyed(keys, key)
        )
        assert response.status_code == 201, "another tenant's key of the same name is its own"
        assert "idempotent-replayed" not in response.headers
        assert await message_count(client, keys, agent_session_id) == 1


async def test_a_failed_request_does_not_spend_its_key(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    key = str(uuid.uuid4())
    missing = f"/v1/sessions/{uuid.uuid4()}/messages"
    assert (await client.post(missing, json=MESSAGE, headers=keyed(tenant, key))).status_code == 404
    agent_session_id = await create_session(client, tenant)
    # The same key names a new request now (another path): the 404 kept nothing.
    url = f"/v1/sessions/{agent_session_id}/messages"
    assert (await client.post(url, json=MESSAGE, headers=keyed(tenant, key))).status_code == 201
    assert await message_count(client, tenant, agent_session_id) == 1


async def test_concurrent_requests_with_one_key_store_the_message_once(
    database: Database, app_client: AppFactory, tenant: TenantKeys
) -> None:
    async with app_client(database) as http:
        agent_session_id = await create_session(http, tenant)
        url = f"/v1/sessions/{agent_session_id}/messages"
        key = str(uuid.uuid4())
        answers = await asyncio.gather(
            *(http.post(url, json=MESSAGE, headers=keyed(tenant, key)) for _ in range(8))
        )
        statuses = sorted(answer.status_code for answer in answers)
        # Those in the first request's own group are told to retry (409); every other gets
        # the first answer.
        assert set(statuses) <= {201, 409}, statuses
        created = [answer.content for answer in answers if answer.status_code == 201]
        assert len(set(created)) == 1
        for answer in answers:
            if answer.status_code == 409:
                assert answer.json()["type"] == "idempotency_in_progress"
                assert answer.headers["retry-after"] == "1"
        retry = await http.post(url, json=MESSAGE, headers=keyed(tenant, key))
        assert retry.content == created[0]
        assert await message_count(http, tenant, agent_session_id) == 1


@pytest.mark.parametrize("wait", [False, True])
async def test_a_retried_commit_creates_no_second_archive(
    database: Database, app_client: AppFactory, own_database: Database, wait: bool
) -> None:
    keys = await make_tenant(own_database, "commits")
    async with app_client(own_database, worker_enabled=True) as http:
        agent_session_id = await create_session(http, keys)
        url = f"/v1/sessions/{agent_session_id}"
        for n in range(3):
            await http.post(
                f"{url}/messages", json={"role": "user", "content": f"m{n}"}, headers=keys.write
            )
        key = str(uuid.uuid4())
        body = {"keep_recent_count": 0, "wait": wait}
        first = await http.post(f"{url}/commit", json=body, headers=keyed(keys, key))
        assert first.status_code == (200 if wait else 202), first.text
        await http.post(
            f"{url}/messages", json={"role": "user", "content": "later"}, headers=keys.write
        )
        retry = await http.post(f"{url}/commit", json=body, headers=keyed(keys, key))
        assert retry.status_code == first.status_code
        assert retry.content == first.content
        archives = (await http.get(f"{url}/archives", headers=keys.read)).json()["items"]
        assert [archive["archive_seq"] for archive in archives] == [1]
        read = (await http.get(url, headers=keys.read)).json()
        assert read["live_message_count"] == 1, "the retry archived nothing"


async def test_a_skipped_commit_is_replayed_too(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    key = str(uuid.uuid4())
    url = f"/v1/sessions/{agent_session_id}/commit"
    first = await client.post(url, json={}, headers=keyed(tenant, key))
    assert first.status_code == 200
    assert first.json()["status"] == "skipped"
    retry = await client.post(url, json={}, headers=keyed(tenant, key))
    assert (retry.status_code, retry.content) == (200, first.content)


@pytest.mark.parametrize("key", ["", "a b", "x" * 256, "ключ"])
async def test_a_malformed_key_is_a_422(
    client: httpx.AsyncClient, tenant: TenantKeys, key: str
) -> None:
    agent_session_id = await create_session(client, tenant)
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json=MESSAGE,
        headers=[
            *((name.encode(), value.encode()) for name, value in tenant.write.items()),
            (b"Idempotency-Key", key.encode()),
        ],
    )
    assert response.status_code == 422, response.text
    assert await message_count(client, tenant, agent_session_id) == 0


async def test_a_retry_serialised_differently_is_the_same_request(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    url = f"/v1/sessions/{agent_session_id}/messages"
    key = str(uuid.uuid4())
    first = await client.post(
        url,
        content=b'{"role":"user","content":"x"}',
        headers={**keyed(tenant, key), "content-type": "application/json"},
    )
    retry = await client.post(
        url,
        content=b'{ "content" : "x", "role" : "user" }',
        headers={**keyed(tenant, key), "content-type": "application/json"},
    )
    assert (first.status_code, retry.status_code) == (201, 201)
    assert retry.content == first.content
    assert await message_count(client, tenant, agent_session_id) == 1
