"""Per-tenant limits: the message rate (a table of the rule) and the quotas over HTTP, each a
429 problem+json with ``Retry-After``, off by default."""

from __future__ import annotations

import uuid

import httpx
import pytest

from app.db import Database
from app.limits.rate import MessageRate
from tests.conftest import AppFactory, TenantKeys, make_tenant
from tests.support.api import create_session

T = uuid.uuid4()


@pytest.mark.parametrize(
    ("per_minute", "takes", "expected"),
    [
        # (now, count) booked in order; expected: None (allowed) or the seconds to wait.
        (60, [(0.0, 60)], [None]),
        (60, [(0.0, 60), (0.0, 1)], [None, 1.0]),
        (60, [(0.0, 59), (0.0, 1), (0.0, 1)], [None, None, 1.0]),
        (60, [(0.0, 60), (1.0, 1)], [None, None]),
        (60, [(0.0, 60), (0.5, 1)], [None, 0.5]),
        (6, [(0.0, 6), (0.0, 2)], [None, 20.0]),
        (6, [(0.0, 6), (120.0, 6)], [None, None]),
    ],
)
def test_the_rate_at_below_and_above_its_limit(
    per_minute: int, takes: list[tuple[float, int]], expected: list[float | None]
) -> None:
    rate = MessageRate(per_minute)
    got = [rate.take(T, count, now) for now, count in takes]
    assert [None if g is None else round(g, 6) for g in got] == expected


def test_a_refused_take_books_nothing() -> None:
    rate = MessageRate(60)
    assert rate.take(T, 60, 0.0) is None
    assert rate.take(T, 30, 0.0) == 30.0
    assert rate.take(T, 1, 1.0) is None, "the refused 30 were not booked"


def test_tenants_have_rates_of_their_own() -> None:
    rate = MessageRate(1)
    assert rate.take(T, 1, 0.0) is None
    assert rate.take(uuid.uuid4(), 1, 0.0) is None


async def test_limits_are_off_by_default(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    agent_session_id = await create_session(client, tenant)
    batch = {"messages": [{"role": "user", "content": "x"}] * 500}
    for _ in range(3):
        response = await client.post(
            f"/v1/sessions/{agent_session_id}/messages:batch", json=batch, headers=tenant.write
        )
        assert response.status_code == 201


async def test_the_message_rate_answers_429_with_retry_after(
    database: Database, app_client: AppFactory
) -> None:
    keys = await make_tenant(database, "rated")
    other = await make_tenant(database, "unrated")
    async with app_client(database, rate_messages_per_minute=5) as http:
        agent_session_id = await create_session(http, keys)
        url = f"/v1/sessions/{agent_session_id}/messages"
        message = {"role": "user", "content": "x"}
        statuses = [
            (await http.post(url, json=message, headers=keys.write)).status_code for _ in range(5)
        ]
        assert statuses == [201] * 5
        limited = await http.post(url, json=message, headers=keys.write)
        assert limited.status_code == 429, limited.text
        assert limited.headers["content-type"] == "application/problem+json"
        assert limited.json()["type"] == "rate_limited"
        assert int(limited.headers["retry-after"]) >= 1
        too_big = await http.post(
            f"{url}:batch", json={"messages": [message] * 6}, headers=keys.write
        )
        assert too_big.status_code == 413, "a batch above a minute's worth can never pass"
        mine = await create_session(http, other)
        assert (
            await http.post(f"/v1/sessions/{mine}/messages", json=message, headers=other.write)
        ).status_code == 201, "another tenant has a rate of its own"
        read = await http.get(f"/v1/sessions/{agent_session_id}", headers=keys.read)
        assert read.json()["message_count"] == 5


async def test_the_quotas_answer_429(own_database: Database, app_client: AppFactory) -> None:
    keys = await make_tenant(own_database, "quoted")
    async with app_client(own_database, quota_agent_sessions=2, quota_stored_bytes=2000) as http:
        first = await create_session(http, keys)
        await create_session(http, keys)
        third = await http.post("/v1/sessions", json={}, headers=keys.write)
        assert third.status_code == 429, third.text
        assert third.json()["type"] == "quota_exceeded"
        assert "retry-after" in third.headers
        url = f"/v1/sessions/{first}/messages"
        stored = await http.post(
            url, json={"role": "user", "content": "a" * 900}, headers=keys.write
        )
        assert stored.status_code == 201
        over = await http.post(
            url, json={"role": "user", "content": "b" * 1200}, headers=keys.write
        )
        assert over.status_code == 429, over.text
        assert over.json()["type"] == "quota_exceeded"
        small = await http.post(url, json={"role": "user", "content": "c"}, headers=keys.write)
        assert small.status_code == 201, "below the quota still fits"
        compat = await http.post(
            "/api/v1/sessions/new-one/messages",
            json={"role": "user", "content": "x"},
            headers=keys.write,
        )
        assert compat.status_code == 503, compat.text
        assert compat.json()["error"]["code"] == "UNAVAILABLE"
