"""The OpenViking-compatible context records too (``record=true``, an extension): the row is
the same ledger's, read and rendered through ``/v1``."""

from __future__ import annotations

import httpx

from app.ledger.records import messages_sha256
from tests.conftest import TenantKeys
from tests.context.helpers import get_context


async def test_the_openviking_context_records_and_renders(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    for text in ("Deploy the billing service on Monday.", "Which region?", "eu-west-1"):
        added = await client.post(
            "/api/v1/sessions/ov-ledger/messages",
            json={"role": "user", "content": text},
            headers=tenant.write,
        )
        assert added.status_code == 200, added.text
    plain = await client.get("/api/v1/sessions/ov-ledger/context", headers=tenant.read)
    assert plain.json()["result"]["context_id"] is None
    answer = await client.get(
        "/api/v1/sessions/ov-ledger/context",
        params={"record": "true", "token_budget": 8000},
        headers=tenant.read,
    )
    assert answer.status_code == 200, answer.text
    context_id = answer.json()["result"]["context_id"]
    sid = (
        await client.get("/v1/sessions", params={"external_id": "ov-ledger"}, headers=tenant.read)
    ).json()["items"][0]["id"]
    row = await client.get(
        f"/v1/sessions/{sid}/contexts/{context_id}", params={"render": "true"}, headers=tenant.read
    )
    assert row.status_code == 200, row.text
    body = row.json()
    assert body["source"] == "openviking"
    assert body["render"]["matches"] is True
    assert body["render"]["unavailable"] == []
    # The hash is of the context as /v1 sends it: the same assembly, whatever the shape served.
    v1 = await get_context(client, tenant, sid, token_budget=8000, reserve_tokens=0)
    assert body["messages_sha256"] == messages_sha256(v1["messages"])
