"""Webhook helpers: a quick retry schedule, a subscription, and a commit that reports an event."""

from __future__ import annotations

from typing import Any

import httpx

from app.webhooks.schedule import RetrySchedule
from tests.support.tenants import TenantKeys

FAST = RetrySchedule(max_attempts=3, base_s=0.05, max_s=0.1)


async def subscribe(
    http: httpx.AsyncClient, keys: TenantKeys, url: str, *events: str
) -> dict[str, Any]:
    response = await http.post(
        "/v1/webhooks", json={"url": url, "events": list(events)}, headers=keys.headers(keys.admin)
    )
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def commit_one(http: httpx.AsyncClient, keys: TenantKeys, content: str) -> dict[str, Any]:
    created = await http.post("/v1/sessions", json={"user_id": "ines"}, headers=keys.write)
    agent_session_id = created.json()["id"]
    await http.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "user", "content": content},
        headers=keys.write,
    )
    committed = await http.post(
        f"/v1/sessions/{agent_session_id}/commit",
        json={"keep_recent_count": 0, "wait": True},
        headers=keys.write,
    )
    body: dict[str, Any] = committed.json()
    return body
