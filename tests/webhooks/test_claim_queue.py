"""The delivery claim's queue (``claimable_webhook_deliveries``): a row per unfinished delivery,
written by the statement that enqueues it, moved or deleted by the one that settles an attempt,
so the claim reads no tenant's deliveries across tenants and loses nothing on a crash.

Each test has a database of its own (the claim takes deliveries of every tenant)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from app import migrations
from app.db import Database
from app.tenancy.principal import Scope
from app.webhooks import repository
from app.webhooks.jobs import AttemptResult, DeliveryJobService
from app.webhooks.outbox import WebhookOutbox
from app.webhooks.repository import DeliveryClaim, WebhookRepository
from app.webhooks.schedule import Next
from tests.conftest import make_tenant
from tests.support.clock import age_webhook_deliveries
from tests.support.postgres import MIGRATION_LOCK, PostgresForTests

DATA = {"agent_session_id": "s", "archive_seq": 1}


class Abandon(Exception):
    """Leaves a transaction rolled back."""


async def subscribed(database: Database, *, endpoints: int = 1) -> uuid.UUID:
    """A new tenant with ``endpoints`` subscriptions to ``archive.done``."""
    keys = await make_tenant(database)
    async with database.tenant(keys.tenant_id) as db:
        for n in range(endpoints):
            await WebhookRepository(db, Scope(keys.tenant_id)).insert_subscription(
                {"url": f"https://93.184.216.34/{n}", "events": ["archive.done"], "secret": "s"}
            )
    return keys.tenant_id


async def emit(database: Database, tenant_id: uuid.UUID) -> None:
    async with database.tenant(tenant_id) as db:
        await WebhookOutbox(db, tenant_id).emit("archive.done", DATA)


async def emit_then_abandon(database: Database, tenant_id: uuid.UUID, seen: list[Any]) -> None:
    """Emit, note what the transaction sees, and roll it back."""
    async with database.tenant(tenant_id) as db:
        await WebhookOutbox(db, tenant_id).emit("archive.done", DATA)
        seen.append(await queue_and_deliveries(db))
        raise Abandon


async def queue_and_deliveries(db: Any) -> tuple[dict[uuid.UUID, Any], dict[uuid.UUID, Any]]:
    """The visible queue rows (id → due time) and unfinished deliveries (id → due time)."""
    queued = await db.execute(
        text("SELECT delivery_id, available_at FROM claimable_webhook_deliveries")
    )
    due = await db.execute(
        text(
            "SELECT delivery_id, next_attempt_at FROM webhook_deliveries"
            " WHERE status IN ('pending', 'sending')"
        )
    )
    return {row[0]: row[1] for row in queued}, {row[0]: row[1] for row in due}


async def owner_view(owner: Database) -> tuple[dict[uuid.UUID, Any], dict[uuid.UUID, Any]]:
    async with owner.unscoped() as db:
        return await queue_and_deliveries(db)


async def claim(database: Database, limit: int = 10) -> list[DeliveryClaim]:
    async with database.unscoped() as db:
        return await repository.claim_due(db, lease_s=60.0, limit=limit)


async def record(database: Database, claimed: DeliveryClaim, then: Next) -> bool:
    result = AttemptResult(datetime.now(UTC), 5, 200 if then.status == "delivered" else 500, None)
    async with database.tenant(claimed.tenant_id) as db:
        return await DeliveryJobService(db, claimed.tenant_id).record(claimed, result, then)


async def test_a_delivery_and_its_queue_row_are_written_together(
    own_database: Database, own_admin_database: Database
) -> None:
    tenant_id = await subscribed(own_database, endpoints=2)
    seen: list[tuple[dict[uuid.UUID, Any], dict[uuid.UUID, Any]]] = []
    with pytest.raises(Abandon):
        await emit_then_abandon(own_database, tenant_id, seen)
    [(queued, due)] = seen
    # In the enqueuing transaction: one row each, due when its delivery is.
    assert len(due) == 2
    assert queued == due
    assert await owner_view(own_admin_database) == ({}, {}), "rolled back together"
    await emit(own_database, tenant_id)
    queued, due = await owner_view(own_admin_database)
    assert len(due) == 2
    assert queued == due


async def test_a_settled_delivery_leaves_no_queue_row(
    own_database: Database, own_admin_database: Database
) -> None:
    tenant_id = await subscribed(own_database, endpoints=2)
    await emit(own_database, tenant_id)
    delivered, failed = await claim(own_database)
    assert await record(own_database, delivered, Next("delivered", None))
    assert await record(own_database, failed, Next("failed", None))
    assert await owner_view(own_admin_database) == ({}, {})
    assert await claim(own_database) == []


async def test_a_retry_is_due_at_its_next_attempt(
    own_database: Database, own_admin_database: Database
) -> None:
    tenant_id = await subscribed(own_database)
    await emit(own_database, tenant_id)
    [first] = await claim(own_database)
    assert await record(own_database, first, Next("pending", 30.0))
    queued, due = await owner_view(own_admin_database)
    assert queued == due == {first.delivery_id: due[first.delivery_id]}
    assert await claim(own_database) == [], "within its backoff"
    assert await age_webhook_deliveries(own_admin_database, 31) == 1
    [second] = await claim(own_database)
    assert (second.delivery_id, second.attempt) == (first.delivery_id, 2)
    # A retry writes its row again, were it ever missing.
    async with own_admin_database.unscoped() as db:
        await db.execute(text("DELETE FROM claimable_webhook_deliveries"))
    assert await record(own_database, second, Next("pending", 30.0))
    queued, due = await owner_view(own_admin_database)
    assert queued == due == {first.delivery_id: due[first.delivery_id]}


async def test_a_claim_whose_process_dies_is_claimable_after_its_lease(
    own_database: Database, own_admin_database: Database
) -> None:
    tenant_id = await subscribed(own_database)
    await emit(own_database, tenant_id)
    [lost] = await claim(own_database)  # and the process dies: nothing is settled
    queued, due = await owner_view(own_admin_database)
    assert queued == due, "the queue row waits for the lease's end"
    assert await claim(own_database) == [], "leased"
    await age_webhook_deliveries(own_admin_database, 61)
    [again] = await claim(own_database)
    assert (again.tenant_id, again.delivery_id, again.attempt) == (
        lost.tenant_id,
        lost.delivery_id,
        2,
    )
    # The dead process's attempt, recorded late, changes nothing: the row is the new claim's.
    assert not await record(own_database, lost, Next("delivered", None))
    queued, due = await owner_view(own_admin_database)
    assert list(queued) == list(due) == [lost.delivery_id]
    assert await record(own_database, again, Next("delivered", None))
    assert await owner_view(own_admin_database) == ({}, {})


async def test_two_tenants_deliveries_are_both_claimed(own_database: Database) -> None:
    tenants = [await subscribed(own_database, endpoints=3) for _ in range(2)]
    for tenant_id in tenants:
        await emit(own_database, tenant_id)
    claims = await claim(own_database, limit=2)
    assert sorted(c.tenant_id for c in claims) == sorted(tenants), "one of each first"
    rest = await claim(own_database)
    assert sorted(c.tenant_id for c in claims + rest) == sorted(tenants * 3)


async def test_rows_of_deliveries_finished_or_gone_are_dropped(
    own_database: Database, own_admin_database: Database
) -> None:
    tenant_id = await subscribed(own_database, endpoints=3)
    await emit(own_database, tenant_id)
    queued, _ = await owner_view(own_admin_database)
    gone, finished, early = sorted(queued)
    async with own_admin_database.unscoped() as db:
        # Behind the queue's back: an erasure deletes a delivery; a delivery finished, or not
        # due yet, with its row left as it was.
        await db.execute(text("DELETE FROM webhook_deliveries WHERE delivery_id = :d"), {"d": gone})
        await db.execute(
            text("UPDATE webhook_deliveries SET status = 'delivered' WHERE delivery_id = :d"),
            {"d": finished},
        )
        await db.execute(
            text(
                "UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour'"
                " WHERE delivery_id = :d"
            ),
            {"d": early},
        )
    assert await claim(own_database) == []
    queued, due = await owner_view(own_admin_database)
    assert queued == due == {early: due[early]}, "dropped, and due when its delivery is"


async def test_a_delivery_held_by_another_transaction_is_skipped(
    own_database: Database, own_admin_database: Database
) -> None:
    tenant_id = await subscribed(own_database, endpoints=2)
    await emit(own_database, tenant_id)
    queued, _ = await owner_view(own_admin_database)
    held, free = sorted(queued)
    async with own_admin_database.unscoped() as holder:
        await holder.execute(
            text("SELECT 1 FROM webhook_deliveries WHERE delivery_id = :d FOR UPDATE"),
            {"d": held},
        )
        # The claim takes the other and leaves this one, without waiting for the holder.
        assert [c.delivery_id for c in await claim(own_database)] == [free]
    queued, due = await owner_view(own_admin_database)
    assert queued[held] > due[held], "looked at again a little later than it is due"
    assert queued[free] == due[free], "due again at the end of its lease"
    await age_webhook_deliveries(own_admin_database, 2)
    assert [c.delivery_id for c in await claim(own_database)] == [held]


async def test_unsubscribing_drops_the_queue_rows(
    own_database: Database, own_admin_database: Database
) -> None:
    tenant_id = await subscribed(own_database)
    other = await subscribed(own_database)
    for each in (tenant_id, other):
        await emit(own_database, each)
    async with own_database.tenant(tenant_id) as db:
        webhooks = WebhookRepository(db, Scope(tenant_id))
        [subscription] = await webhooks.subscriptions()
        assert await webhooks.delete_subscription(subscription.webhook_id)
    queued, due = await owner_view(own_admin_database)
    assert len(due) == 1
    assert queued == due, "the other tenant's row stays"


BEFORE = "20261202_0310_vector_scope"
CLAIM_DEFINITION = (
    "SELECT pg_get_functiondef("
    "'workmem_claim_webhook_deliveries(double precision, integer)'::regprocedure)"
)


def run_sql(url: str, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as connection:
        cursor = connection.execute(sql.encode(), params)
        return cursor.fetchall() if cursor.description else []


def test_the_revision_queues_unfinished_deliveries_and_downgrades_to_the_old_claim(
    postgres: PostgresForTests,
) -> None:
    url = postgres.create_database("wmqueue")
    with psycopg.connect(
        make_url(postgres.url("postgres")).set(drivername="postgresql").render_as_string(False),
        autocommit=True,
    ) as lock:
        # Roles are cluster-wide: migrate one database at a time, like the fixtures.
        lock.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        migrations.upgrade(url, BEFORE)
        [(before,)] = run_sql(url, CLAIM_DEFINITION)
        tenant = uuid.uuid4()
        for statement in (
            "INSERT INTO tenants (tenant_id, name) VALUES (%(t)s, 't')",
            "INSERT INTO webhook_subscriptions (tenant_id, webhook_id, url, events, secret)"
            " VALUES (%(t)s, %(t)s, 'https://93.184.216.34/', ARRAY['archive.done'], 's')",
            "INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_id, event_type,"
            " payload, status, next_attempt_at)"
            " SELECT %(t)s, %(t)s, gen_random_uuid(), 'archive.done', '{}', s,"
            " now() + n * interval '1 minute'"
            " FROM unnest(ARRAY['pending', 'sending', 'delivered', 'failed']) WITH ORDINALITY"
            " AS u(s, n)",
        ):
            run_sql(url, statement, {"t": tenant})
        migrations.upgrade(url)
        queued = run_sql(
            url,
            "SELECT d.status FROM claimable_webhook_deliveries q JOIN webhook_deliveries d"
            " USING (tenant_id, delivery_id) WHERE q.available_at = d.next_attempt_at"
            " ORDER BY d.status",
        )
        assert queued == [("pending",), ("sending",)]
        migrations.downgrade(url, BEFORE)
        assert run_sql(url, CLAIM_DEFINITION) == [(before,)]
        assert run_sql(url, "SELECT to_regclass('claimable_webhook_deliveries')") == [(None,)]
