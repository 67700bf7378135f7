"""Retention and expiry against the real database: the policy through the API, and each purge
with the clock moved in SQL (rows' timestamps set back, never a sleep)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import text

from app.db import Database
from app.lifecycle.retention_jobs import run_pass
from app.lifecycle.retention_repository import RetentionRepository
from app.lifecycle.retention_service import TenantPurge
from tests.audit.pages import sign_in
from tests.conftest import AppFactory, TenantKeys, make_tenant
from tests.support.api import append, assistant, commit, create_session, user

POLICY = "/v1/tenant/retention"


async def put_policy(client: httpx.AsyncClient, keys: TenantKeys, **policy: Any) -> httpx.Response:
    return await client.put(POLICY, json=policy, headers=keys.headers(keys.admin))


async def archived(
    client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str, *texts: str
) -> None:
    """``texts`` appended as user/assistant pairs and archived (nothing kept live)."""
    messages = [user(t) if i % 2 == 0 else assistant(t) for i, t in enumerate(texts)]
    await append(client, keys, agent_session_id, messages)
    done = await commit(client, keys, agent_session_id, keep_recent_count=0, wait=True)
    assert done.json()["status"] == "done", done.text


async def sql(database: Database, statement: str, **values: Any) -> list[Any]:
    """A statement as the schema owner (row-level security does not apply to it); the rows of
    a query, none for a change."""
    async with database.unscoped() as db:
        result = await db.execute(text(statement), values)
        return list(result.all()) if statement.lstrip().startswith("SELECT") else []


async def purge(database: Database, tenant_id: uuid.UUID, kind: str, batch: int = 100) -> Any:
    async with database.tenant(tenant_id) as db:
        purger = TenantPurge(db, tenant_id)
        policy = await purger.policy()
        if kind == "archive_messages":
            return await purger.archive_messages(policy, batch=batch)
        if kind == "idle_sessions":
            return await purger.idle_sessions(policy, batch=batch)
        return await purger.expired_memories(batch=batch)


# --- the policy -------------------------------------------------------------------------------


async def test_a_tenant_keeps_everything_until_its_admin_sets_a_policy(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    admin = tenant.headers(tenant.admin)
    shown = await client.get(POLICY, headers=admin)
    assert shown.status_code == 200, shown.text
    assert shown.json() == {
        "archive_messages_days": None,
        "idle_session_days": None,
        "memory_days": {},
        "updated_at": None,
        "updated_by": None,
    }
    put = await put_policy(
        client, tenant, archive_messages_days=30, idle_session_days=90, memory_days={"event": 7}
    )
    assert put.status_code == 200, put.text
    body = put.json()
    assert (body["archive_messages_days"], body["idle_session_days"]) == (30, 90)
    assert body["memory_days"] == {"event": 7}
    assert body["updated_at"] is not None
    assert body["updated_by"] is not None
    assert (await client.get(POLICY, headers=admin)).json() == body
    # PUT replaces the whole policy: what it leaves out is off.
    replaced = await put_policy(client, tenant, idle_session_days=120)
    assert replaced.json()["archive_messages_days"] is None
    assert replaced.json()["memory_days"] == {}


@pytest.mark.parametrize(
    "body",
    [
        {"archive_messages_days": 0},
        {"archive_messages_days": -1},
        {"idle_session_days": 36_501},
        {"idle_session_days": 10**30},
        {"idle_session_days": "30"},
        {"idle_session_days": 30.5},
        {"idle_session_days": True},
        {"memory_days": {"mood": 30}},
        {"memory_days": {"event": 0}},
        {"memory_days": []},
        {"archive_days": 30},
    ],
)
async def test_a_bad_policy_is_refused_and_nothing_is_stored(
    client: httpx.AsyncClient, tenant: TenantKeys, body: dict[str, Any]
) -> None:
    before = await put_policy(client, tenant, archive_messages_days=30)
    refused = await client.put(POLICY, json=body, headers=tenant.headers(tenant.admin))
    assert refused.status_code == 422, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    after = await client.get(POLICY, headers=tenant.headers(tenant.admin))
    assert after.json() == before.json()


async def test_the_policy_takes_an_admin_key_bound_to_no_user(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    for key in (tenant.writer, tenant.reader):
        for method, body in (("get", None), ("put", {"idle_session_days": 1})):
            refused = await client.request(method, POLICY, json=body, headers=tenant.headers(key))
            assert refused.status_code == 403, (method, refused.text)
    bound = await client.post(
        "/v1/keys", json={"role": "admin", "user_id": "alice"}, headers=tenant.headers(tenant.admin)
    )
    alice = tenant.headers(bound.json()["key"])
    assert (
        await client.put(POLICY, json={"idle_session_days": 1}, headers=alice)
    ).status_code == 403
    shown = await client.get(POLICY, headers=tenant.headers(tenant.admin))
    assert shown.json()["idle_session_days"] is None


async def test_one_tenants_policy_is_not_anothers(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    await put_policy(client, tenant, archive_messages_days=3)
    theirs = await client.get(POLICY, headers=other_tenant.headers(other_tenant.admin))
    assert theirs.json()["archive_messages_days"] is None


# --- raw messages of old archives -------------------------------------------------------------


async def test_old_archives_lose_their_raw_messages_and_keep_their_working_memory(
    client: httpx.AsyncClient,
    tenant: TenantKeys,
    database: Database,
    admin_database: Database,
    app_client: AppFactory,
) -> None:
    sid = await create_session(client, tenant)
    await archived(
        client, tenant, sid, "Please fix zanzibar_totals.py, totals are wrong.", "Looking now."
    )
    await archived(client, tenant, sid, "Now the recent question about invoices.", "Sure.")
    await append(client, tenant, sid, [user("live and kept")])
    await put_policy(client, tenant, archive_messages_days=30)
    # Archive 1 was made 30 days and a second ago, archive 2 just under 30 days ago.
    await sql(
        admin_database,
        "UPDATE archives SET created_at = now() - CASE archive_seq"
        " WHEN 1 THEN interval '30 days 1 second' ELSE interval '29 days 23 hours' END"
        " WHERE tenant_id = :tenant_id",
        tenant_id=tenant.tenant_id,
    )
    purged = await purge(database, tenant.tenant_id, "archive_messages")
    assert [(str(p.agent_session_id), p.archive_seq, p.message_count) for p in purged] == [
        (sid, 1, 2)
    ]
    expanded = (await client.get(f"/v1/sessions/{sid}/archives/1", headers=tenant.read)).json()
    assert expanded["messages"] == []
    assert expanded["messages_purged_count"] == 2
    assert expanded["messages_purged_at"] is not None
    assert "purged by the tenant's retention policy" in expanded["messages_note"]
    assert expanded["status"] == "done"
    assert expanded["overview"]
    kept = (await client.get(f"/v1/sessions/{sid}/archives/2", headers=tenant.read)).json()
    assert [m["seq"] for m in kept["messages"]] == [3, 4]
    assert kept["messages_purged_at"] is None
    assert kept["messages_note"] is None
    memory = await client.get(f"/v1/sessions/{sid}/working-memory", headers=tenant.read)
    assert memory.status_code == 200
    assert memory.json()["archive_seq"] == 2
    found = await client.get(
        f"/v1/sessions/{sid}/history/search", params={"q": "zanzibar_totals"}, headers=tenant.read
    )
    assert found.json()["items"] == [], "the purged messages' words left the search index"
    listed = (await client.get(f"/v1/sessions/{sid}/messages", headers=tenant.read)).json()
    assert [m["seq"] for m in listed["items"]] == [3, 4, 5]
    kept_words = await client.get(
        f"/v1/sessions/{sid}/history/search", params={"q": "invoices"}, headers=tenant.read
    )
    assert [hit["seq"] for hit in kept_words.json()["items"]] == [3]
    (stored,) = await sql(
        admin_database,
        "SELECT s.stored_bytes = (SELECT sum(octet_length(m.message::text)"
        " + coalesce(octet_length(m.metadata::text), 0)) FROM messages m"
        " WHERE m.tenant_id = s.tenant_id AND m.agent_session_id = s.agent_session_id)"
        " FROM agent_sessions s WHERE s.agent_session_id = :sid",
        sid=uuid.UUID(sid),
    )
    assert stored == (True,), "the stored-bytes counter counts only the messages kept"
    async with app_client(database) as browser:
        await sign_in(browser, tenant.reader)
        page = await browser.get(f"/ui/sessions/{sid}/archives/1/messages")
        kept_page = await browser.get(f"/ui/sessions/{sid}/archives/2/messages")
    assert "The 2 raw messages 1–2 of this archive were purged" in page.text
    assert "purged" not in kept_page.text
    assert "invoices" in kept_page.text
    # Idempotent: the next pass finds nothing more.
    assert await purge(database, tenant.tenant_id, "archive_messages") == []


async def test_a_pass_purges_at_most_its_batch_and_only_done_archives(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database, admin_database: Database
) -> None:
    sid = await create_session(client, tenant)
    for n in range(4):
        await archived(client, tenant, sid, f"question {n}", f"answer {n}")
    await put_policy(client, tenant, archive_messages_days=1)
    await sql(
        admin_database,
        "UPDATE archives SET created_at = now() - interval '2 days',"
        " status = CASE archive_seq WHEN 4 THEN 'failed' ELSE status END"
        " WHERE tenant_id = :tenant_id",
        tenant_id=tenant.tenant_id,
    )
    first = await purge(database, tenant.tenant_id, "archive_messages", batch=2)
    second = await purge(database, tenant.tenant_id, "archive_messages", batch=2)
    third = await purge(database, tenant.tenant_id, "archive_messages", batch=2)
    assert [len(first), len(second), len(third)] == [2, 1, 0]
    failed = (await client.get(f"/v1/sessions/{sid}/archives/4", headers=tenant.read)).json()
    assert [m["seq"] for m in failed["messages"]] == [7, 8], "a failed archive's retry reads them"


async def test_nothing_is_purged_while_the_policy_is_off(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database, admin_database: Database
) -> None:
    sid = await create_session(client, tenant)
    await archived(client, tenant, sid, "old question", "old answer")
    await sql(
        admin_database,
        "UPDATE archives SET created_at = now() - interval '100 years'"
        " WHERE tenant_id = :tenant_id",
        tenant_id=tenant.tenant_id,
    )
    await sql(
        admin_database,
        "UPDATE agent_sessions SET created_at = now() - interval '100 years',"
        " updated_at = now() - interval '100 years' WHERE tenant_id = :tenant_id",
        tenant_id=tenant.tenant_id,
    )
    assert await purge(database, tenant.tenant_id, "archive_messages") == []
    assert await purge(database, tenant.tenant_id, "idle_sessions") == []
    shown = await client.get(f"/v1/sessions/{sid}/archives/1", headers=tenant.read)
    assert len(shown.json()["messages"]) == 2


# --- idle agent sessions ----------------------------------------------------------------------


async def test_idle_agent_sessions_are_deleted_with_their_memories(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database, admin_database: Database
) -> None:
    idle = await create_session(client, tenant, user_id="ida")
    await archived(client, tenant, idle, "I prefer green tea to coffee.", "Noted.")
    active = await create_session(client, tenant, user_id="ida")
    await append(client, tenant, active, [user("still here")])
    memories = (await client.get("/v1/memories", headers=tenant.read)).json()["items"]
    assert [m["agent_session_id"] for m in memories] == [idle]
    await put_policy(client, tenant, idle_session_days=90)
    await sql(
        admin_database,
        "UPDATE agent_sessions SET created_at = now() - interval '200 days',"
        " updated_at = now() - CASE agent_session_id WHEN :idle THEN interval '90 days 1 second'"
        " ELSE interval '89 days 23 hours' END WHERE tenant_id = :tenant_id",
        tenant_id=tenant.tenant_id,
        idle=uuid.UUID(idle),
    )
    deleted = await purge(database, tenant.tenant_id, "idle_sessions")
    assert [str(d) for d in deleted] == [idle]
    assert (await client.get(f"/v1/sessions/{idle}", headers=tenant.read)).status_code == 404
    assert (await client.get(f"/v1/sessions/{active}", headers=tenant.read)).status_code == 200
    assert (await client.get("/v1/memories", headers=tenant.read)).json()["items"] == []
    events = await sql(
        admin_database,
        "SELECT event, actor, details->>'reason', new_content FROM memory_events"
        " WHERE tenant_id = :tenant_id ORDER BY event_id",
        tenant_id=tenant.tenant_id,
    )
    assert [tuple(e) for e in events] == [
        ("ADD", "extractor:rules", "new", None),
        ("DELETE", "retention", "agent_session_idle", None),
    ], "the memory's history keeps ids only, and says why it went"
    assert await purge(database, tenant.tenant_id, "idle_sessions") == []


async def test_an_idle_agent_session_with_a_fork_stays_until_the_fork_is_gone(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database, admin_database: Database
) -> None:
    parent = await create_session(client, tenant, user_id="fay")
    await archived(client, tenant, parent, "We chose the blue plan.", "Noted.")
    forked = await client.post(
        f"/v1/sessions/{parent}:fork", json={"at_archive": 1}, headers=tenant.write
    )
    assert forked.status_code == 201, forked.text
    fork = forked.json()["id"]
    await put_policy(client, tenant, idle_session_days=90)
    aged = (
        "UPDATE agent_sessions SET created_at = now() - interval '200 days',"
        " updated_at = now() - interval '91 days' WHERE tenant_id = :tenant_id"
        " AND agent_session_id = ANY(:ids)"
    )
    await sql(admin_database, aged, tenant_id=tenant.tenant_id, ids=[uuid.UUID(parent)])
    # The parent is idle, but its fork shares its history: it stays.
    assert await purge(database, tenant.tenant_id, "idle_sessions") == []
    assert (await client.get(f"/v1/sessions/{parent}", headers=tenant.read)).status_code == 200
    await sql(admin_database, aged, tenant_id=tenant.tenant_id, ids=[uuid.UUID(fork)])
    # Both idle: the fork goes first, the parent with the next batch.
    assert [str(d) for d in await purge(database, tenant.tenant_id, "idle_sessions")] == [fork]
    assert [str(d) for d in await purge(database, tenant.tenant_id, "idle_sessions")] == [parent]


async def test_an_agent_session_appended_to_during_the_purge_stays(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database, admin_database: Database
) -> None:
    sid = await create_session(client, tenant)
    await put_policy(client, tenant, idle_session_days=1)
    aged = (
        "UPDATE agent_sessions SET created_at = now() - interval '3 days',"
        " updated_at = now() - interval '2 days' WHERE tenant_id = :tenant_id"
    )
    await sql(admin_database, aged, tenant_id=tenant.tenant_id)
    # An append in flight holds the row (it locks it first): the purge skips it.
    async with admin_database.unscoped() as appending:
        await appending.execute(
            text("SELECT 1 FROM agent_sessions WHERE agent_session_id = :sid FOR UPDATE"),
            {"sid": uuid.UUID(sid)},
        )
        assert await purge(database, tenant.tenant_id, "idle_sessions") == []
        await appending.execute(
            text("UPDATE agent_sessions SET updated_at = now() WHERE agent_session_id = :sid"),
            {"sid": uuid.UUID(sid)},
        )
    assert await purge(database, tenant.tenant_id, "idle_sessions") == []
    # The deleting statement states idleness again: a row found idle, then appended to before
    # the delete, stays.
    await sql(admin_database, aged, tenant_id=tenant.tenant_id)
    async with database.tenant(tenant.tenant_id) as db:
        repository = RetentionRepository(db, tenant.tenant_id)
        found = await repository.lock_idle_sessions(days=1, batch=10)
        assert [str(f) for f in found] == [sid]
        await db.execute(
            text("UPDATE agent_sessions SET updated_at = now() WHERE agent_session_id = :sid"),
            {"sid": uuid.UUID(sid)},
        )
        assert await repository.delete_idle_sessions(found, days=1) == []
    assert (await client.get(f"/v1/sessions/{sid}", headers=tenant.read)).status_code == 200


# --- expiring memories ------------------------------------------------------------------------


async def test_a_memory_expires_by_its_categorys_lifetime_and_is_hidden_at_once(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database, admin_database: Database
) -> None:
    await put_policy(client, tenant, memory_days={"preference": 7})
    sid = await create_session(client, tenant, user_id="eve")
    await archived(
        client, tenant, sid, "I prefer green tea to coffee.", "Noted.", "My name is Eve.", "Hi Eve."
    )
    rows = await sql(
        admin_database,
        "SELECT category, expires_at - created_at FROM memories WHERE tenant_id = :tenant_id"
        " ORDER BY category",
        tenant_id=tenant.tenant_id,
    )
    lifetimes = dict(rows)
    assert lifetimes["preference"].days == 7
    assert lifetimes["preference"].seconds == 0
    assert lifetimes.get("profile") is None, "a category without a lifetime never expires"
    (tea,) = [
        m
        for m in (await client.get("/v1/memories", headers=tenant.read)).json()["items"]
        if m["category"] == "preference"
    ]
    searched = await client.get(
        "/v1/memories/search", params={"q": "green tea"}, headers=tenant.read
    )
    assert tea["id"] in [hit["id"] for hit in searched.json()["items"]]
    assert [hit["expires_at"] for hit in searched.json()["items"]] == [tea["expires_at"]]
    assert tea["expires_at"] is not None
    profile = await client.get("/v1/memories", params={"category": "profile"}, headers=tenant.read)
    assert [m["expires_at"] for m in profile.json()["items"]] == [None]
    recall: dict[str, str | int] = {"recall": "green tea", "recall_min_score": 0}
    recalled = await client.get(f"/v1/sessions/{sid}/context", params=recall, headers=tenant.read)
    assert tea["id"] in recalled.text
    await sql(
        admin_database,
        "UPDATE memories SET expires_at = now() - interval '1 second' WHERE memory_id = :id",
        id=uuid.UUID(tea["id"]),
    )
    # Hidden at once, before any purge: list, search, read, recall.
    listed = (await client.get("/v1/memories", headers=tenant.read)).json()["items"]
    assert tea["id"] not in [m["id"] for m in listed]
    searched = await client.get(
        "/v1/memories/search", params={"q": "green tea"}, headers=tenant.read
    )
    assert searched.json()["items"] == []
    assert (await client.get(f"/v1/memories/{tea['id']}", headers=tenant.read)).status_code == 404
    recalled = await client.get(f"/v1/sessions/{sid}/context", params=recall, headers=tenant.read)
    assert recalled.status_code == 200
    assert tea["id"] not in recalled.text
    assert await sql(
        admin_database, "SELECT 1 FROM memories WHERE memory_id = :id", id=uuid.UUID(tea["id"])
    ), "hidden, still stored until the worker purges it"
    assert await purge(database, tenant.tenant_id, "expired_memories") == 1
    assert not await sql(
        admin_database, "SELECT 1 FROM memories WHERE memory_id = :id", id=uuid.UUID(tea["id"])
    )
    events = await sql(
        admin_database,
        "SELECT event, actor, details->>'reason', new_content FROM memory_events"
        " WHERE memory_id = :id ORDER BY event_id",
        id=uuid.UUID(tea["id"]),
    )
    assert [tuple(e) for e in events][-1] == ("DELETE", "retention", "expired", None)
    assert all(e[3] is None for e in events), "its history keeps no content"
    assert await purge(database, tenant.tenant_id, "expired_memories") == 0
    others = (await client.get("/v1/memories", headers=tenant.read)).json()["items"]
    assert [m["category"] for m in others] == ["profile"]


# --- the pass over every tenant ---------------------------------------------------------------


async def test_the_workers_pass_purges_every_tenant_and_counts_it(
    app_client: AppFactory, own_database: Database, own_admin_database: Database
) -> None:
    def purged(kind: str) -> float:
        return REGISTRY.get_sample_value("workmem_retention_purged_total", {"kind": kind}) or 0.0

    before = {kind: purged(kind) for kind in ("archive_messages", "idle_sessions")}
    tenants = [await make_tenant(own_database, f"t{n}") for n in range(2)]
    async with app_client(own_database) as http:
        for keys in tenants:
            sid = await create_session(http, keys)
            await archived(http, keys, sid, "old words", "old answer")
            await put_policy(http, keys, archive_messages_days=1, idle_session_days=5)
    await sql(
        own_admin_database,
        "UPDATE archives SET created_at = now() - interval '2 days';"
        " UPDATE agent_sessions SET created_at = now() - interval '10 days',"
        " updated_at = now() - interval '3 days'",
    )
    report = await run_pass(own_database, batch=10)
    assert (report.tenants, report.archives, report.archive_messages) == (2, 2, 4)
    assert report.idle_sessions == 0
    assert report.failed_tenants == 0
    await sql(
        own_admin_database, "UPDATE agent_sessions SET updated_at = now() - interval '6 days'"
    )
    again = await run_pass(own_database, batch=10)
    assert (again.archives, again.idle_sessions) == (0, 2)
    assert purged("archive_messages") - before["archive_messages"] == 4
    assert purged("idle_sessions") - before["idle_sessions"] == 2
