"""Recording by default: an agent session with ``record_contexts`` records every context whose
request does not say ``record``; ``record=false`` on the request still leaves it out, and
``record=true`` records on an agent session that does not record by default."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.ledger.records import records_context
from tests.conftest import TenantKeys
from tests.context.helpers import get_context
from tests.support.api import append, assistant, create_session, user


@pytest.mark.parametrize(
    ("asked", "session_default", "recorded"),
    [
        (None, False, False),
        (None, True, True),
        (True, False, True),
        (True, True, True),
        (False, False, False),
        (False, True, False),
    ],
)
def test_the_request_decides_then_the_agent_session(
    asked: bool | None, session_default: bool, recorded: bool
) -> None:
    assert records_context(asked, session_default=session_default) is recorded


async def contexts(client: httpx.AsyncClient, keys: TenantKeys, sid: str) -> list[dict[str, Any]]:
    page = await client.get(f"/v1/sessions/{sid}/contexts", headers=keys.read)
    assert page.status_code == 200, page.text
    items: list[dict[str, Any]] = page.json()["items"]
    return items


async def set_default(
    client: httpx.AsyncClient, keys: TenantKeys, sid: str, body: dict[str, Any]
) -> httpx.Response:
    return await client.patch(f"/v1/sessions/{sid}", json=body, headers=keys.write)


async def test_an_agent_session_records_by_default_until_told_otherwise(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant, record_contexts=True)
    await append(client, tenant, sid, [user("Ship on Tuesday."), assistant("Tuesday it is.")])
    shown = await client.get(f"/v1/sessions/{sid}", headers=tenant.read)
    assert shown.json()["record_contexts"] is True

    by_default = await get_context(client, tenant, sid)
    assert by_default["context_id"] is not None
    assert (await get_context(client, tenant, sid, record="false"))["context_id"] is None
    assert [row["context_id"] for row in await contexts(client, tenant, sid)] == [
        by_default["context_id"]
    ]

    # Turned off: only a request that asks records.
    turned = await set_default(client, tenant, sid, {"record_contexts": False})
    assert turned.status_code == 200, turned.text
    assert turned.json()["record_contexts"] is False
    assert (await get_context(client, tenant, sid))["context_id"] is None
    asked = await get_context(client, tenant, sid, record="true")
    assert asked["context_id"] is not None
    assert len(await contexts(client, tenant, sid)) == 2

    # A PATCH that leaves the field out keeps it; null and non-booleans are refused, unchanged.
    assert (await set_default(client, tenant, sid, {"record_contexts": True})).status_code == 200
    kept = await set_default(client, tenant, sid, {"memory_policy": None})
    assert kept.json()["record_contexts"] is True
    for bad in (None, "yes", 1):
        refused = await set_default(client, tenant, sid, {"record_contexts": bad})
        assert refused.status_code == 422, refused.text
    assert (await client.get(f"/v1/sessions/{sid}", headers=tenant.read)).json()[
        "record_contexts"
    ] is True

    # A fork starts with its parent's setting, and records by default too.
    forked = await client.post(f"/v1/sessions/{sid}:fork", json={"at_seq": 2}, headers=tenant.write)
    assert forked.status_code == 201, forked.text
    assert forked.json()["record_contexts"] is True
    fork_id = forked.json()["id"]
    assert (await get_context(client, tenant, fork_id))["context_id"] is not None


async def test_a_new_agent_session_records_only_when_asked(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    created = await client.get(f"/v1/sessions/{sid}", headers=tenant.read)
    assert created.json()["record_contexts"] is False
    await append(client, tenant, sid, [user("Ship on Tuesday.")])
    assert (await get_context(client, tenant, sid))["context_id"] is None
    assert await contexts(client, tenant, sid) == []
    refused = await client.post(
        "/v1/sessions", json={"record_contexts": "true"}, headers=tenant.write
    )
    assert refused.status_code == 422, refused.text


async def test_the_openviking_context_follows_the_default(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    added = await client.post(
        "/api/v1/sessions/ov-default/messages",
        json={"role": "user", "content": "Deploy on Monday."},
        headers=tenant.write,
    )
    assert added.status_code == 200, added.text
    found = await client.get(
        "/v1/sessions", params={"external_id": "ov-default"}, headers=tenant.read
    )
    sid = found.json()["items"][0]["id"]
    assert (await set_default(client, tenant, sid, {"record_contexts": True})).status_code == 200
    path = "/api/v1/sessions/ov-default/context"
    recorded = await client.get(path, headers=tenant.read)
    assert recorded.json()["result"]["context_id"] is not None
    left_out = await client.get(path, params={"record": "false"}, headers=tenant.read)
    assert left_out.json()["result"]["context_id"] is None
    rows = await contexts(client, tenant, sid)
    assert [(row["context_id"], row["source"]) for row in rows] == [
        (recorded.json()["result"]["context_id"], "openviking")
    ]
