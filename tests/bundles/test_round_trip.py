"""Export a tenant, import the bundle into another tenant, and compare every exported table row
by row (as the schema owner, so row-level security hides nothing); importing again changes
nothing; the --user and --session scopes; a fork exported alone brings its shared prefix."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.bundles.service import Scope, export_bundle, import_bundle
from app.bundles.tables import EXCLUDED, TABLES
from app.config import Settings
from app.db import Database
from app.wiring import build_embedder
from tests.conftest import TenantKeys, make_tenant
from tests.support.spread import Person, ok, spread


class Quiet:
    def table(self, name: str, total: int) -> None:
        pass

    def advance(self, rows: int) -> None:
        pass


async def tenant_tables(admin_database: Database) -> set[str]:
    async with admin_database.unscoped() as db:
        rows = await db.execute(
            text(
                "SELECT c.table_name FROM information_schema.columns c "
                "JOIN information_schema.tables t USING (table_schema, table_name) "
                "WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' "
                "AND c.column_name = 'tenant_id'"
            )
        )
        return {name for (name,) in rows}


async def test_every_tenant_table_is_exported_or_left_out_with_a_reason(
    admin_database: Database,
) -> None:
    exported = {table.name for table in TABLES}
    assert not exported & set(EXCLUDED)
    assert all(reason.strip() for reason in EXCLUDED.values())
    assert await tenant_tables(admin_database) == exported | set(EXCLUDED)


async def table_rows(admin_database: Database, tenant_id: uuid.UUID) -> dict[str, list[Any]]:
    """Every exported table's rows of the tenant, without ``tenant_id`` and the numbers the
    database gives (their order kept), as comparable tuples."""
    found: dict[str, list[Any]] = {}
    async with admin_database.unscoped() as db:
        for table in TABLES:
            dropped = ["tenant_id"] + ([table.identity] if table.identity else [])
            order = table.order_by if table.identity is None else (table.identity,)
            result = await db.execute(
                text(
                    f"SELECT (to_jsonb(t) - CAST(:dropped AS text[]))::text FROM {table.name} t "  # noqa: S608
                    f"WHERE tenant_id = :tenant ORDER BY {', '.join(order)}"
                ),
                {"dropped": dropped, "tenant": tenant_id},
            )
            found[table.name] = [row for (row,) in result]
    return found


async def fill(
    client: httpx.AsyncClient, database: Database, admin_database: Database
) -> tuple[TenantKeys, list[Person]]:
    keys = await make_tenant(database, "bundle source")
    people = [Person(f"user-{uuid.uuid4().hex[:8]}", f"zq{uuid.uuid4().hex[:10]}") for _ in "ab"]
    for person in people:
        await spread(client, keys, person)
        await ok(
            await client.put(
                f"/v1/users/{person.user_id}/memory-policy",
                json={"long_term_extraction": True},
                headers=keys.headers(keys.admin),
            )
        )
    # A fork at the end shares both archives: its lineage names the agent session.
    whole = await ok(
        await client.post(
            f"/v1/sessions/{people[0].agent_session_ids[0]}:fork",
            json={"at_archive": 2},
            headers=keys.write,
        ),
        201,
    )
    assert whole["lineage"]["parent_session_id"] == people[0].agent_session_ids[0]
    # An archive action (a retry, as an operator would have recorded), for the table to hold one.
    async with admin_database.unscoped() as db:
        await db.execute(
            text(
                "INSERT INTO archive_actions (tenant_id, agent_session_id, archive_seq, action, "
                "actor, reason) VALUES (:t, :s, 1, 'retry', 'operator', 'a test retry')"
            ),
            {"t": keys.tenant_id, "s": uuid.UUID(people[0].agent_session_ids[0])},
        )
    return keys, people


async def import_into(
    database: Database, settings: Settings, bundle: Path, tenant_id: uuid.UUID
) -> Any:
    return await import_bundle(database, bundle, tenant_id, build_embedder(settings), Quiet())


async def test_a_tenant_round_trips_table_by_table_and_a_second_import_changes_nothing(
    client: httpx.AsyncClient,
    database: Database,
    admin_database: Database,
    settings: Settings,
    tmp_path: Path,
) -> None:
    source, _ = await fill(client, database, admin_database)
    bundle = tmp_path / "tenant.tar.zst"
    manifest = await export_bundle(database, Scope(source.tenant_id), bundle, Quiet())
    assert manifest["scope"]["agent_sessions"] == 9  # two per user, a fork of each, one more fork
    before = await table_rows(admin_database, source.tenant_id)
    for table in TABLES:
        assert before[table.name], f"the source holds no {table.name} row: the test proves nothing"
    counts = {entry["table"]: entry["rows"] for entry in manifest["files"]}
    assert counts == {name: len(rows) for name, rows in before.items()}

    # Into another tenant while the first still exists: same agent session ids, no collision.
    target = await make_tenant(database, "bundle target")
    report = await import_into(database, settings, bundle, target.tenant_id)
    assert report.changed
    assert report.agent_sessions_new == 9
    after = await table_rows(admin_database, target.tenant_id)
    for table in TABLES:
        assert after[table.name] == before[table.name], table.name
    assert await table_rows(admin_database, source.tenant_id) == before

    again = await import_into(database, settings, bundle, target.tenant_id)
    assert not again.changed
    assert again.agent_sessions_present == 9
    assert set(again.inserted.values()) == {0}
    assert await table_rows(admin_database, target.tenant_id) == before

    # The imported tenant works through the API: the fork still reads its shared prefix.
    fork = next(row for row in before["agent_sessions"] if '"parent_session_id": "' in row)
    fork_id = fork.split('"agent_session_id": "')[1].split('"')[0]
    seen = [
        await ok(await client.get(f"/v1/sessions/{fork_id}/messages", headers=keys.read))
        for keys in (source, target)
    ]
    assert seen[0]["items"]
    assert seen[0]["items"] == seen[1]["items"]


async def test_the_user_and_session_scopes(
    client: httpx.AsyncClient,
    database: Database,
    admin_database: Database,
    settings: Settings,
    tmp_path: Path,
) -> None:
    source, (alice, bob) = await fill(client, database, admin_database)
    whole = await table_rows(admin_database, source.tenant_id)

    by_user = tmp_path / "alice.tar.zst"
    manifest = await export_bundle(
        database, Scope(source.tenant_id, user_id=alice.user_id), by_user, Quiet()
    )
    assert manifest["scope"]["agent_sessions"] == 5
    assert manifest["scope"]["ancestors_added"] == []
    target = await make_tenant(database, "alice only")
    await import_into(database, settings, by_user, target.tenant_id)
    got = await table_rows(admin_database, target.tenant_id)
    sessions = [
        json.loads(row)["agent_session_id"]
        for row in whole["agent_sessions"]
        if json.loads(row)["user_id"] == alice.user_id
    ]
    memories = [
        json.loads(row)["memory_id"]
        for row in whole["memories"]
        if json.loads(row)["agent_session_id"] in sessions
    ]
    names = [*sessions, *memories, f'"user_id": "{alice.user_id}"']
    for table in TABLES:
        mine = [row for row in whole[table.name] if any(name in row for name in names)]
        assert mine, table.name
        assert got[table.name] == mine, table.name
        assert not any(bob.marker in row or bob.user_id in row for row in got[table.name])

    # A fork alone brings the agent session it was forked from: its shared prefix lives there.
    listed = await ok(
        await client.get("/v1/sessions", params={"user_id": bob.user_id}, headers=source.read)
    )
    fork = next(item for item in listed["items"] if item.get("lineage"))
    parent = fork["lineage"]["parent_session_id"]
    by_session = tmp_path / "fork.tar.zst"
    manifest = await export_bundle(
        database, Scope(source.tenant_id, session_id=uuid.UUID(fork["id"])), by_session, Quiet()
    )
    assert manifest["scope"]["agent_sessions"] == 1
    assert manifest["scope"]["ancestors_added"] == [parent]
    target = await make_tenant(database, "one fork")
    await import_into(database, settings, by_session, target.tenant_id)
    seen = [
        await ok(await client.get(f"/v1/sessions/{fork['id']}/messages", headers=keys.read))
        for keys in (source, target)
    ]
    assert seen[0]["items"]
    assert seen[0]["items"] == seen[1]["items"]
    sessions = await ok(await client.get("/v1/sessions", headers=target.read))
    assert {item["id"] for item in sessions["items"]} == {fork["id"], parent}


@pytest.mark.parametrize("scope", ["user", "session"])
async def test_an_unknown_scope_is_a_missing_object(
    database: Database, tmp_path: Path, scope: str
) -> None:
    keys = await make_tenant(database, "empty")
    chosen = (
        Scope(keys.tenant_id, user_id="nobody")
        if scope == "user"
        else Scope(keys.tenant_id, session_id=uuid.uuid4())
    )
    from app.errors import NotFound

    with pytest.raises(NotFound):
        await export_bundle(database, chosen, tmp_path / "x.tar.zst", Quiet())
    assert not (tmp_path / "x.tar.zst").exists()


async def test_an_archive_pending_at_export_is_claimable_after_import(
    client: httpx.AsyncClient,
    database: Database,
    admin_database: Database,
    settings: Settings,
    tmp_path: Path,
) -> None:
    from app.archives import queue

    source = await make_tenant(database, "bundle pending")
    sid = (await ok(await client.post("/v1/sessions", json={}, headers=source.write), 201))["id"]
    await ok(
        await client.post(
            f"/v1/sessions/{sid}/messages:batch",
            json={"messages": [{"role": "user", "content": f"step {n}"} for n in range(4)]},
            headers=source.write,
        ),
        201,
    )
    await ok(
        await client.post(
            f"/v1/sessions/{sid}/commit", json={"keep_recent_count": 1}, headers=source.write
        ),
        202,
    )
    # Exported while its archive is still to be generated (whatever a worker did meanwhile).
    async with admin_database.unscoped() as db:
        await db.execute(
            text(
                "UPDATE archives SET status = 'pending', attempt = 0, lease_until = NULL,"
                " finished_at = NULL WHERE tenant_id = :t"
            ),
            {"t": source.tenant_id},
        )
    bundle = tmp_path / "pending.tar.zst"
    await export_bundle(database, Scope(source.tenant_id), bundle, Quiet())
    target = await make_tenant(database, "bundle pending target")
    await import_into(database, settings, bundle, target.tenant_id)
    async with database.unscoped() as db:
        claim = await queue.claim_next(
            db, lease_s=60, tenant_id=target.tenant_id, agent_session_id=uuid.UUID(sid)
        )
    assert claim is not None
    assert (claim.tenant_id, claim.archive_seq) == (target.tenant_id, 1)
