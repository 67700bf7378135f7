"""Erasing a user: their text and ids leave every table of the tenant (scanned as the schema
owner, every column of every table the catalogue lists), other users and tenants keep every
row, a content-free tombstone stays, and the signed receipt verifies (and fails once changed)."""

from __future__ import annotations

import asyncio
import hashlib
import uuid

import httpx
import pytest
from sqlalchemy import text

from app.db import Database
from app.lifecycle import receipts
from app.lifecycle.erasure import ErasureService
from tests.conftest import TenantKeys, make_tenant
from tests.support.scan import rows_holding, tenant_row_counts
from tests.support.spread import WEBHOOK, Person, messages_of, ok, spread


async def holdings(
    admin_database: Database, person: Person, tenant_id: uuid.UUID
) -> dict[str, dict[str, int]]:
    return {
        needle: found
        for needle in person.needles()
        if (found := await rows_holding(admin_database, needle, tenant_id=tenant_id))
    }


async def erase(client: httpx.AsyncClient, keys: TenantKeys, user_id: str) -> httpx.Response:
    return await client.delete(f"/v1/users/{user_id}", headers=keys.headers(keys.admin))


async def public_key(client: httpx.AsyncClient, keys: TenantKeys) -> bytes:
    document = await ok(await client.get("/v1/receipts/public-key", headers=keys.read))
    return receipts.load_public_key(document["pem"])


async def sessions_of(
    client: httpx.AsyncClient, tenant: TenantKeys, person: Person, *, sessions: int, messages: int
) -> None:
    """``sessions`` agent sessions of ``person``, each holding ``messages`` of their messages."""
    for number in range(sessions):
        created = await ok(
            await client.post(
                "/v1/sessions",
                json={"user_id": person.user_id, "external_id": f"{person.marker}-{number}"},
                headers=tenant.write,
            ),
            201,
        )
        await ok(
            await client.post(
                f"/v1/sessions/{created['id']}/messages:batch",
                json={"messages": messages_of(person.marker)[:messages]},
                headers=tenant.write,
            ),
            201,
        )


async def queued_deliveries_quoting(
    admin_database: Database, tenant_id: uuid.UUID, needle: str
) -> list[uuid.UUID]:
    """Ids of the tenant's deliveries quoting ``needle`` that have a row in the claim's queue."""
    async with admin_database.unscoped() as db:
        rows = await db.execute(
            text(
                "SELECT q.delivery_id FROM claimable_webhook_deliveries q"
                " JOIN webhook_deliveries d USING (tenant_id, delivery_id)"
                " WHERE q.tenant_id = :tenant_id AND strpos(d.payload::text, :needle) > 0"
            ),
            {"tenant_id": tenant_id, "needle": needle},
        )
        return [row[0] for row in rows]


async def still_queued(
    admin_database: Database, tenant_id: uuid.UUID, delivery_ids: list[uuid.UUID]
) -> list[uuid.UUID]:
    async with admin_database.unscoped() as db:
        rows = await db.execute(
            text(
                "SELECT delivery_id FROM claimable_webhook_deliveries"
                " WHERE tenant_id = :tenant_id AND delivery_id = ANY(:ids)"
            ),
            {"tenant_id": tenant_id, "ids": delivery_ids},
        )
        return [row[0] for row in rows]


def tag() -> str:
    return uuid.uuid4().hex[:10]


async def test_an_erased_user_leaves_no_text_nor_id_in_any_table(
    client: httpx.AsyncClient, database: Database, admin_database: Database
) -> None:
    tenant = await make_tenant(database, "erasing")
    other_tenant = await make_tenant(database, "untouched")
    for keys in (tenant, other_tenant):
        await ok(
            await client.post("/v1/webhooks", json=WEBHOOK, headers=keys.headers(keys.admin)), 201
        )
    erased = Person(f"user-{tag()}", f"zq{tag()}")
    neighbour = Person(f"user-{tag()}", f"zq{tag()}")
    # Same user id and text in another tenant: another person, who keeps everything.
    namesake = Person(erased.user_id, erased.marker)
    await spread(client, tenant, erased)
    await spread(client, tenant, neighbour)
    await spread(client, other_tenant, namesake)
    assert erased.memory_ids, "the user needs long-term memories"

    before = await holdings(admin_database, erased, tenant.tenant_id)
    held = {column.split(".")[0] for found in before.values() for column in found}
    assert {
        "agent_sessions",
        "messages",
        "archives",
        "wm_section_versions",
        "memories",
        "memory_events",
        "pins",
        "pin_events",
        "message_retractions",
        "message_redactions",
        "webhook_deliveries",
        "idempotency_keys",
        "api_keys",
        "context_records",
    } <= held, held
    neighbours_before = await holdings(admin_database, neighbour, tenant.tenant_id)
    others_before = await tenant_row_counts(admin_database, other_tenant.tenant_id)
    queued = await queued_deliveries_quoting(admin_database, tenant.tenant_id, erased.user_id)
    assert queued, "the user's deliveries need rows in the claim's queue"

    answer = await erase(client, tenant, erased.user_id)
    receipt = await ok(answer)

    assert await holdings(admin_database, erased, tenant.tenant_id) == {}
    assert await still_queued(admin_database, tenant.tenant_id, queued) == []
    assert await holdings(admin_database, neighbour, tenant.tenant_id) == neighbours_before
    assert await tenant_row_counts(admin_database, other_tenant.tenant_id) == others_before
    # The receipt: what went, signed, naming the user only by the tenant's digest.
    digest = hashlib.sha256(f"{tenant.tenant_id}:{erased.user_id}".encode()).hexdigest()
    assert receipt["user_id_sha256"] == digest
    assert receipt["tenant_id"] == str(tenant.tenant_id)
    assert erased.user_id not in answer.text
    assert erased.marker not in answer.text
    removed = receipt["removed"]
    # Two agent sessions and a fork of each, at message 3: no archive ends by then, so each
    # fork holds messages 1..3 as its own live ones, and one more it was sent.
    assert removed["agent_sessions"] == 2 * 2
    assert removed["messages"] == 2 * 9 + 2 * (3 + 1)
    assert removed["archives"] == 4
    assert removed["memories"] == len(erased.memory_ids)
    assert removed["pins"] == 4
    assert removed["message_redactions"] == 2
    assert removed["message_retractions"] == 2
    assert removed["api_keys"] == 1
    assert removed["context_records"] == 2
    assert min(removed["webhook_deliveries"], removed["idempotency_keys"]) > 0
    assert receipt["rows_removed"] == sum(removed.values())
    receipts.verify(receipt, await public_key(client, tenant))
    # The API agrees: nothing of the user, and the key bound to them is refused.
    listed = await ok(
        await client.get("/v1/sessions", params={"user_id": erased.user_id}, headers=tenant.read)
    )
    assert listed["items"] == []
    refused = await client.get("/v1/sessions", headers=tenant.headers(erased.key))
    assert refused.status_code == 401
    # The tombstone, for the audit: no content, no user id.
    async with admin_database.unscoped() as db:
        rows = (
            await db.execute(
                text(
                    "SELECT user_id_sha256, requested_by, rows_removed FROM wm_user_erasures "
                    "WHERE tenant_id = :tenant_id"
                ),
                {"tenant_id": tenant.tenant_id},
            )
        ).all()
    assert [(row.user_id_sha256, row.rows_removed) for row in rows] == [
        (digest, receipt["rows_removed"])
    ]
    assert str(rows[0].requested_by) == receipt["requested_by_api_key_id"]


async def test_erasing_again_finds_nothing(client: httpx.AsyncClient, database: Database) -> None:
    tenant = await make_tenant(database, "again")
    person = Person(f"user-{tag()}", f"zq{tag()}")
    sid = await ok(
        await client.post("/v1/sessions", json={"user_id": person.user_id}, headers=tenant.write),
        201,
    )
    assert sid["id"]
    first = await ok(await erase(client, tenant, person.user_id))
    assert first["removed"]["agent_sessions"] == 1
    receipts.verify(first, await public_key(client, tenant))
    for user_id in (person.user_id, "nobody-ever"):
        again = await erase(client, tenant, user_id)
        assert again.status_code == 404
        assert again.json()["type"] == "not_found"
        assert user_id not in again.text


async def test_an_interrupted_erasure_is_finished_by_erasing_again(
    client: httpx.AsyncClient, database: Database, admin_database: Database
) -> None:
    """One step committed (one agent session gone), then the process died: the tombstone
    keeps that step's counts, and the next erasure goes on from it to one receipt of all."""
    tenant = await make_tenant(database, "resumed")
    person = Person(f"user-{tag()}", f"zq{tag()}")
    await sessions_of(client, tenant, person, sessions=3, messages=3)
    async with database.tenant(tenant.tenant_id) as db:
        erasure_id = await ErasureService(db, tenant.tenant_id).start(person.user_id, None)
    async with database.tenant(tenant.tenant_id) as db:
        assert await ErasureService(db, tenant.tenant_id).erase_next_session(
            erasure_id, person.user_id
        )
    left = await rows_holding(admin_database, person.marker, tenant_id=tenant.tenant_id)
    assert left["messages.content_text"] == 6  # two agent sessions of three remain

    receipt = await ok(await erase(client, tenant, person.user_id))
    assert receipt["erasure_id"] == str(erasure_id)
    assert receipt["removed"]["agent_sessions"] == 3
    assert receipt["removed"]["messages"] == 9
    assert receipt["requested_by_api_key_id"] is None  # the interrupted run's requester
    assert await rows_holding(admin_database, person.marker, tenant_id=tenant.tenant_id) == {}
    receipts.verify(receipt, await public_key(client, tenant))


async def test_a_changed_receipt_does_not_verify(
    client: httpx.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database, "tampered")
    other = await make_tenant(database, "other-signer")
    await ok(await client.post("/v1/sessions", json={"user_id": "u-1"}, headers=tenant.write), 201)
    receipt = await ok(await erase(client, tenant, "u-1"))
    key = await public_key(client, tenant)
    receipts.verify(receipt, key)
    changed = {**receipt, "removed": {**receipt["removed"], "agent_sessions": 0}}
    with pytest.raises(receipts.ReceiptInvalid, match="does not verify"):
        receipts.verify(changed, key)
    with pytest.raises(receipts.ReceiptInvalid, match="does not verify"):
        receipts.verify(receipt, await public_key(client, other))
    again = await public_key(client, tenant)
    assert again == key, "a tenant keeps one signing key"


@pytest.mark.parametrize("role", ["writer", "reader"])
async def test_only_an_unbound_admin_key_erases(
    client: httpx.AsyncClient, database: Database, role: str
) -> None:
    tenant = await make_tenant(database, "roles")
    await ok(await client.post("/v1/sessions", json={"user_id": "kept"}, headers=tenant.write), 201)
    key = tenant.writer if role == "writer" else tenant.reader
    refused = await client.delete("/v1/users/kept", headers=tenant.headers(key))
    assert refused.status_code == 403
    assert refused.headers["content-type"] == "application/problem+json"
    listed = await ok(
        await client.get("/v1/sessions", params={"user_id": "kept"}, headers=tenant.read)
    )
    assert len(listed["items"]) == 1


def test_the_guides_receipt_verifies_with_its_key() -> None:
    """docs/lifecycle.md shows a real receipt and its key: they agree, and nothing else does."""
    import json
    import re
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "lifecycle.md").read_text()
    shown = guide.split("### The receipt", 1)[1].split("```json\n", 1)[1].split("```", 1)[0]
    receipt = json.loads(shown)
    key = re.search(r'"public_key": "([A-Za-z0-9+/=]+)"', guide)
    assert key is not None
    receipts.verify(receipt, receipts.load_public_key(key.group(1)))
    with pytest.raises(receipts.ReceiptInvalid):
        receipts.verify({**receipt, "rows_removed": 32}, receipts.load_public_key(key.group(1)))


async def test_two_erasures_of_one_user_at_once_make_one_receipt(
    client: httpx.AsyncClient, database: Database, admin_database: Database
) -> None:
    tenant = await make_tenant(database, "at-once")
    person = Person(f"user-{tag()}", f"zq{tag()}")
    await sessions_of(client, tenant, person, sessions=4, messages=2)
    answers = await asyncio.gather(*(erase(client, tenant, person.user_id) for _ in range(2)))
    # The second joins the first's erasure and answers its receipt (or, had the first finished
    # before it began, finds nothing left: 404). Never a second erasure.
    bodies = [answer.json() for answer in answers if answer.status_code == 200]
    assert [a.status_code for a in answers if a.status_code != 200] in ([], [404])
    assert bodies
    assert all(body == bodies[0] for body in bodies)
    assert bodies[0]["removed"]["agent_sessions"] == 4
    assert bodies[0]["removed"]["messages"] == 8
    async with admin_database.unscoped() as db:
        from sqlalchemy import text

        tombstones = await db.scalar(
            text("SELECT count(*) FROM user_erasures WHERE tenant_id = :tenant_id"),
            {"tenant_id": tenant.tenant_id},
        )
    assert tombstones == 1
    assert await rows_holding(admin_database, person.marker, tenant_id=tenant.tenant_id) == {}
