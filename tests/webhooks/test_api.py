"""The subscriptions API: admin keys only, destinations vetted, secrets shown once, tenants apart."""

from __future__ import annotations

import uuid

import httpx

from tests.conftest import TenantKeys


async def test_subscribe_list_and_unsubscribe(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    admin = tenant.headers(tenant.admin)
    # The shared test app allows no private destination: loopback is refused, with the reason.
    refused = await client.post(
        "/v1/webhooks",
        json={"url": "http://127.0.0.1:9/hooks", "events": ["archive.done"]},
        headers=admin,
    )
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"][0]["loc"] == ["body", "url"]
    assert "loopback" in refused.json()["detail"]
    # Nor through a 6to4 address carrying it, nor to port 0; nothing is stored.
    for url, reason in (
        ("http://[2002:7f00:1::]/hooks", "loopback"),
        ("http://[2002:a9fe:a9fe::]/latest", "link-local"),
        ("http://93.184.216.34:0/hooks", "port 0"),
    ):
        refused = await client.post(
            "/v1/webhooks", json={"url": url, "events": ["archive.done"]}, headers=admin
        )
        assert refused.status_code == 422, (url, refused.text)
        assert reason in refused.json()["detail"], url
    assert (await client.get("/v1/webhooks", headers=admin)).json()["items"] == []

    created = await client.post(
        "/v1/webhooks",
        json={
            "url": "http://93.184.216.34/hooks",
            "events": ["archive.done", "memory.changed", "archive.done"],
            "description": "billing",
        },
        headers=admin,
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["events"] == ["archive.done", "memory.changed"]
    assert body["secret"].startswith("whsec_")
    listed = await client.get("/v1/webhooks", headers=admin)
    assert [item["id"] for item in listed.json()["items"]] == [body["id"]]
    assert "secret" not in listed.json()["items"][0]
    deliveries = await client.get(f"/v1/webhooks/{body['id']}/deliveries", headers=admin)
    assert deliveries.json() == {"items": [], "next_cursor": None}

    deleted = await client.delete(f"/v1/webhooks/{body['id']}", headers=admin)
    assert deleted.status_code == 204
    assert (await client.delete(f"/v1/webhooks/{body['id']}", headers=admin)).status_code == 404
    gone = await client.get(f"/v1/webhooks/{body['id']}/deliveries", headers=admin)
    assert gone.status_code == 404


async def test_only_admin_keys_of_the_tenant(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    payload = {"url": "https://93.184.216.34/in", "events": ["archive.failed"]}
    for key in (tenant.writer, tenant.reader):
        response = await client.post("/v1/webhooks", json=payload, headers=tenant.headers(key))
        assert response.status_code == 403, response.text
        assert response.json()["type"] == "forbidden"
        assert (await client.get("/v1/webhooks", headers=tenant.headers(key))).status_code == 403
    created = await client.post("/v1/webhooks", json=payload, headers=tenant.headers(tenant.admin))
    webhook_id = created.json()["id"]
    stranger = other_tenant.headers(other_tenant.admin)
    assert (await client.get("/v1/webhooks", headers=stranger)).json()["items"] == []
    for method, path in (
        ("DELETE", f"/v1/webhooks/{webhook_id}"),
        ("GET", f"/v1/webhooks/{webhook_id}/deliveries"),
        ("GET", f"/v1/webhooks/{uuid.uuid4()}/deliveries"),
    ):
        response = await client.request(method, path, headers=stranger)
        assert response.status_code == 404, (method, path)


async def test_invalid_subscriptions_are_422_with_nothing_stored(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    admin = tenant.headers(tenant.admin)
    for payload in (
        {"url": "https://93.184.216.34/in", "events": []},
        {"url": "https://93.184.216.34/in", "events": ["archive.started"]},
        {"url": "ftp://93.184.216.34/in", "events": ["archive.done"]},
        {"url": "https://u:p@93.184.216.34/in", "events": ["archive.done"]},
        {"url": "https://93.184.216.34/in", "events": ["archive.done"], "secret": "mine"},
        {"url": "https://93.184.216.34/\u0000", "events": ["archive.done"]},
    ):
        response = await client.post("/v1/webhooks", json=payload, headers=admin)
        assert response.status_code == 422, (payload, response.text)
    assert (await client.get("/v1/webhooks", headers=admin)).json()["items"] == []
