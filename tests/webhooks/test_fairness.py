"""No tenant can crowd out another's webhooks: a tenant holds at most
``WORKMEM_WEBHOOKS_MAX_SUBSCRIPTIONS`` subscriptions (concurrent creates included), and the
delivery claim takes every tenant's oldest due delivery before anyone's second, so a tenant whose
endpoint hangs never holds another's delivery back by more than one delivery timeout."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from app.db import Database
from app.webhooks import repository
from app.webhooks.delivery import DeliveryConfig, WebhookDeliverer
from tests.conftest import AppFactory, make_tenant
from tests.support.webhook_receiver import WebhookReceiver
from tests.support.webhooks import FAST, commit_one, subscribe

BODY = {"url": "http://127.0.0.1:9/hooks", "events": ["archive.done"]}


async def test_a_tenant_holds_at_most_its_limit_of_subscriptions(
    own_database: Database, app_client: AppFactory
) -> None:
    keys, other = await make_tenant(own_database), await make_tenant(own_database)
    admin = keys.headers(keys.admin)
    async with app_client(
        own_database, webhooks_allow_private=True, webhooks_max_subscriptions=3
    ) as http:
        answers = await asyncio.gather(
            *(http.post("/v1/webhooks", json=BODY, headers=admin) for _ in range(8))
        )
        assert sorted(a.status_code for a in answers) == [201] * 3 + [409] * 5
        refused = next(a for a in answers if a.status_code == 409)
        assert refused.headers["content-type"] == "application/problem+json"
        assert "3 webhook subscriptions" in refused.json()["detail"]
        listed = (await http.get("/v1/webhooks", headers=admin)).json()["items"]
        assert len(listed) == 3
        # Another tenant's limit is its own; a deletion makes room again.
        for _ in range(3):
            created = await http.post("/v1/webhooks", json=BODY, headers=other.headers(other.admin))
            assert created.status_code == 201
        gone = await http.delete(f"/v1/webhooks/{listed[0]['id']}", headers=admin)
        assert gone.status_code == 204
        again = await http.post("/v1/webhooks", json=BODY, headers=admin)
        assert again.status_code == 201, again.text


def test_the_default_limit_is_set() -> None:
    from app.config import Settings

    assert Settings(database_url="postgresql://unused/x").webhooks_max_subscriptions == 25


@pytest.fixture
def hanging() -> Iterator[WebhookReceiver]:
    server = WebhookReceiver(hang=True)
    server.start()
    yield server
    server.stop()


async def test_a_hanging_tenant_does_not_hold_back_another(
    own_database: Database,
    app_client: AppFactory,
    receiver: WebhookReceiver,
    hanging: WebhookReceiver,
) -> None:
    slow, fast = await make_tenant(own_database, "slow"), await make_tenant(own_database, "fast")
    async with app_client(own_database, webhooks_allow_private=True) as http:
        for _ in range(12):
            await subscribe(http, slow, hanging.url, "archive.done")
        await subscribe(http, fast, receiver.url, "archive.done")
        await commit_one(http, slow, "the slow tenant's turn")
        await commit_one(http, fast, "the fast tenant's turn")  # due after all twelve
    # The claim: every tenant's first due delivery before any tenant's second.
    async with own_database.unscoped() as db:
        claims = await repository.claim_due(db, lease_s=60.0, limit=4)
        await db.rollback()
    assert sorted(str(c.tenant_id) for c in claims).count(str(fast.tenant_id)) == 1
    assert [c.tenant_id for c in claims][:2].count(fast.tenant_id) == 1
    # The loop, a batch of four at a time, with the slow tenant's endpoint hanging: the fast
    # tenant's delivery goes in the first batch, not after the slow one's twelve.
    loop = WebhookDeliverer(
        own_database, DeliveryConfig(allow_private=True, schedule=FAST, batch=4, timeout_s=0.5)
    )
    try:
        assert await loop.run_once() == 4
    finally:
        await loop.close()
    assert len(receiver.received) == 1
    assert len(hanging.received) == 3
