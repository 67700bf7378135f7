"""Delivery end to end inside the process: events land in the outbox with the state change they
report, the loop signs and sends them, retries with backoff, resumes after a crash, and every
attempt is visible in the API. Each test has a database of its own (the loop claims across
tenants)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from standardwebhooks import Webhook

from app.archives.generation import WorkingMemoryGenerator
from app.db import Database
from app.llm.fakes import ScriptedChatModel
from app.llm.ports import PermanentModelError
from app.webhooks import repository
from app.webhooks.delivery import DeliveryConfig, WebhookDeliverer
from app.webhooks.schedule import RetrySchedule
from tests.conftest import AppFactory, TenantKeys, make_tenant
from tests.support.clock import age_webhook_deliveries
from tests.support.webhook_receiver import WebhookReceiver
from tests.support.webhooks import FAST, commit_one, subscribe


def deliverer(database: Database, **config: Any) -> WebhookDeliverer:
    return WebhookDeliverer(database, DeliveryConfig(allow_private=True, schedule=FAST, **config))


async def deliveries(
    http: httpx.AsyncClient, keys: TenantKeys, webhook_id: str
) -> list[dict[str, Any]]:
    response = await http.get(
        f"/v1/webhooks/{webhook_id}/deliveries", headers=keys.headers(keys.admin)
    )
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


async def test_archive_done_is_delivered_signed(
    own_database: Database, app_client: AppFactory, receiver: WebhookReceiver
) -> None:
    keys = await make_tenant(own_database)
    async with app_client(own_database, webhooks_allow_private=True) as http:
        webhook = await subscribe(http, keys, receiver.url, "archive.done")
        committed = await commit_one(http, keys, "Please fix app/api/orders.py today.")
        assert committed["status"] == "done"
        # Written with the archive's result, before anything was sent.
        queued = await deliveries(http, keys, webhook["id"])
        assert [(d["event_type"], d["status"], d["attempts_made"]) for d in queued] == [
            ("archive.done", "pending", 0)
        ]
        loop = deliverer(own_database)
        try:
            assert await loop.run_once() == 1
        finally:
            await loop.close()
        [request] = receiver.received
        assert request.path == "/hooks/workmem"
        event = Webhook(webhook["secret"]).verify(request.body, dict(request.headers))
        assert event["type"] == "archive.done"
        data = event["data"]
        assert data["archive_seq"] == 1
        assert (data["start_seq"], data["end_seq"], data["status"]) == (1, 1, "done")
        assert data["user_id"] == "ines"
        assert data["generator"] == "offline"
        delivered = (await deliveries(http, keys, webhook["id"]))[0]
        assert delivered["status"] == "delivered"
        assert delivered["event_id"] == request.headers["webhook-id"]
        assert delivered["next_attempt_at"] is None
        assert [(a["attempt"], a["status_code"], a["error"]) for a in delivered["attempts"]] == [
            (1, 200, None)
        ]
        assert json.loads(request.body) == delivered["payload"]


async def test_failed_attempts_are_retried_with_backoff_then_fail(
    own_database: Database,
    own_admin_database: Database,
    app_client: AppFactory,
    receiver: WebhookReceiver,
) -> None:
    keys = await make_tenant(own_database)
    receiver.answer(500, 503, 500, 500)
    slow = RetrySchedule(max_attempts=3, base_s=30, max_s=60)
    async with app_client(own_database, webhooks_allow_private=True) as http:
        retried = await subscribe(http, keys, receiver.url, "archive.done")
        await commit_one(http, keys, "first")
        loop = WebhookDeliverer(own_database, DeliveryConfig(allow_private=True, schedule=slow))
        try:
            assert await loop.run_once() == 1
            [waiting] = await deliveries(http, keys, retried["id"])
            assert waiting["status"] == "pending"
            # Due again only after its backoff (the first one: base_s, less the jitter).
            first = datetime.fromisoformat(waiting["attempts"][0]["started_at"])
            due = datetime.fromisoformat(waiting["next_attempt_at"])
            assert (due - first).total_seconds() >= 0.8 * slow.base_s
            assert await loop.run_once() == 0, "within its backoff"
            for attempt in (2, 3):  # past the longest backoff, its jitter included
                assert await age_webhook_deliveries(own_admin_database, 2 * slow.max_s) == 1
                assert await loop.run_once() == 1, f"attempt {attempt} is due"
        finally:
            await loop.close()
        [failed] = await deliveries(http, keys, retried["id"])
        assert failed["status"] == "failed"
        assert [(a["attempt"], a["status_code"]) for a in failed["attempts"]] == [
            (1, 500),
            (2, 503),
            (3, 500),
        ]
        assert failed["attempts"][1]["error"] == "the endpoint answered 503"
        ids = {request.headers["webhook-id"] for request in receiver.received}
        assert len(receiver.received) == 3
        assert ids == {failed["event_id"]}, "every retry carries the same message id"


async def test_a_delivery_claimed_by_a_crashed_process_is_sent_after_its_lease(
    own_database: Database,
    own_admin_database: Database,
    app_client: AppFactory,
    receiver: WebhookReceiver,
) -> None:
    keys = await make_tenant(own_database)
    async with app_client(own_database, webhooks_allow_private=True) as http:
        webhook = await subscribe(http, keys, receiver.url, "archive.done")
        await commit_one(http, keys, "survive me")
        # A process claims the delivery and dies before sending it.
        async with own_database.unscoped() as db:
            [claim] = await repository.claim_due(db, lease_s=60, limit=10)
        assert claim.attempt == 1
        loop = deliverer(own_database)
        try:
            assert await loop.run_once() == 0, "leased: not due yet"
            assert await age_webhook_deliveries(own_admin_database, 30) == 1
            assert await loop.run_once() == 0, "half the lease has passed"
            await age_webhook_deliveries(own_admin_database, 31)
            assert await loop.run_once() == 1
        finally:
            await loop.close()
        [delivered] = await deliveries(http, keys, webhook["id"])
        assert delivered["status"] == "delivered"
        assert delivered["attempts_made"] == 2
        assert [a["attempt"] for a in delivered["attempts"]] == [2]
        assert len(receiver.received) == 1


async def test_the_destination_is_vetted_again_at_each_attempt(
    own_database: Database, app_client: AppFactory, receiver: WebhookReceiver
) -> None:
    keys = await make_tenant(own_database)
    async with app_client(own_database, webhooks_allow_private=True) as http:
        webhook = await subscribe(http, keys, receiver.url, "archive.done")
        await commit_one(http, keys, "x")
        strict = WebhookDeliverer(own_database, DeliveryConfig(allow_private=False, schedule=FAST))
        try:
            assert await strict.run_once() == 1
        finally:
            await strict.close()
        [pending] = await deliveries(http, keys, webhook["id"])
        assert pending["status"] == "pending"
        [attempt] = pending["attempts"]
        assert attempt["status_code"] is None
        assert attempt["error"] == "destination refused: not a public address, or no address at all"
        assert receiver.received == []


async def test_archive_failed_and_memory_changed_reach_their_subscribers_only(
    own_database: Database, app_client: AppFactory, receiver: WebhookReceiver
) -> None:
    keys = await make_tenant(own_database)
    failing = WorkingMemoryGenerator(
        ScriptedChatModel([PermanentModelError("the model refused the request")]),
        fallback="none",
    )
    async with app_client(own_database, webhooks_allow_private=True, generator=failing) as http:
        failed_hook = await subscribe(http, keys, receiver.url, "archive.failed")
        memory_hook = await subscribe(http, keys, receiver.url + "?m", "memory.changed")
        committed = await commit_one(http, keys, "I work as a nurse in Lyon.")
        assert committed["status"] == "failed"
        assert [d["event_type"] for d in await deliveries(http, keys, failed_hook["id"])] == [
            "archive.failed"
        ]
        # The failed archive wrote no memories: nothing for the memory subscriber yet.
        assert await deliveries(http, keys, memory_hook["id"]) == []
        loop = deliverer(own_database)
        try:
            assert await loop.run_once() == 1
        finally:
            await loop.close()
        event = Webhook(failed_hook["secret"]).verify(
            receiver.received[0].body, dict(receiver.received[0].headers)
        )
        assert event["type"] == "archive.failed"
        assert event["data"]["error_stage"] == "generate"
        assert "the model refused the request" in event["data"]["error"]

    async with app_client(own_database, webhooks_allow_private=True) as http:
        remembered = await commit_one(http, keys, "I work as a nurse in Lyon.")
        assert remembered["archive"]["memories"]["added"] >= 1
        [changed] = await deliveries(http, keys, memory_hook["id"])
        assert changed["event_type"] == "memory.changed"
        data = changed["payload"]["data"]
        assert data["counts"]["ADD"] == remembered["archive"]["memories"]["added"]
        assert data["archive_seq"] == 1
        assert [c["event"] for c in data["changes"]] == ["ADD"] * data["counts"]["ADD"]
        memory_id = data["changes"][0]["memory_id"]
        forgotten = await http.delete(f"/v1/memories/{memory_id}", headers=keys.write)
        assert forgotten.status_code == 204
        latest = (await deliveries(http, keys, memory_hook["id"]))[0]
        assert latest["payload"]["data"]["changes"] == [{"event": "DELETE", "memory_id": memory_id}]


async def test_unsubscribing_drops_what_was_not_delivered(
    own_database: Database,
    own_admin_database: Database,
    app_client: AppFactory,
    receiver: WebhookReceiver,
) -> None:
    keys = await make_tenant(own_database)
    async with app_client(own_database, webhooks_allow_private=True) as http:
        webhook = await subscribe(http, keys, receiver.url, "archive.done")
        await commit_one(http, keys, "x")
        deleted = await http.delete(
            f"/v1/webhooks/{webhook['id']}", headers=keys.headers(keys.admin)
        )
        assert deleted.status_code == 204
    async with own_admin_database.unscoped() as db:
        left = (await db.execute(text("SELECT count(*) FROM webhook_deliveries"))).scalar()
    assert left == 0
    loop = deliverer(own_database)
    try:
        assert await loop.run_once() == 0
    finally:
        await loop.close()
    assert receiver.received == []


@pytest.mark.parametrize("events", [["archive.failed"], ["memory.changed"]])
async def test_no_subscriber_no_delivery(
    own_database: Database,
    app_client: AppFactory,
    receiver: WebhookReceiver,
    events: list[str],
) -> None:
    keys = await make_tenant(own_database)
    async with app_client(own_database, webhooks_allow_private=True) as http:
        webhook = await subscribe(http, keys, receiver.url, *events)
        committed = await commit_one(http, keys, "Hello there, just a greeting.")
        assert committed["status"] == "done"
        assert committed["archive"]["memories"]["added"] == 0
        assert await deliveries(http, keys, webhook["id"]) == []
