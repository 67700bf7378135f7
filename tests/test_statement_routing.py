"""Every statement of a mixed workload names one tenant: what a tenant-distributed cluster needs.

A Citus cluster distributed by ``tenant_id`` (docs/scaling.md) routes a statement to one node
when each table it reads or writes is filtered by (or inserted with) one ``tenant_id`` value.
This records every statement the API and the archive jobs send during appends (single, batched,
grouped), a retraction, commits, archive processing (with its webhook outbox rows), context
(with pins and clearing), expand, working memory and history, pins, history search, listing and
deletion, idempotent retries, quotas, a tenant admin's keys, webhook subscriptions and their
deliveries (queued, claimed, recorded, dropped with their subscription), across two tenants,
and checks each: a ``tenant_id`` equality or insert whose values are all one tenant, the
per-transaction tenant setup and the append function (both named by their tenant token), the
quota lock (called with its tenant), or one of the listed privileged functions and
connection-level statements.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager
from sqlalchemy import text

from app.archives.generation import WorkingMemoryGenerator
from app.archives.preparing import Preparer
from app.config import Settings
from app.db import Database
from app.main import create_app
from app.memories.extraction import MemoryExtractor
from app.webhooks import repository
from app.webhooks.jobs import AttemptResult, DeliveryJobService
from app.webhooks.schedule import Next
from tests.conftest import TenantKeys, make_tenant
from tests.support.long_sessions import coding_session
from tests.support.postgres import PostgresForTests
from tests.support.privileged import documented
from tests.support.statements import Statement, StatementLog

PREPARING = WorkingMemoryGenerator(None, max_input_tokens=5_000)
"""The smallest input budget: the idle agent session below takes several batches."""

TENANT_PARAM = re.compile(r"tenant_id\s*=\s*%\((\w+)\)s")
# A multi-row insert names each row's value: ``tenant_id_m0``, ``_m1``… when built with
# ``values([...])``, ``tenant_id__0``, ``__1``… when the driver's rows are sent as one statement.
MULTI_ROW_TENANT = re.compile(r"tenant_id(?:_m|__)\d+")
INSERT_COLUMNS = re.compile(r"^INSERT INTO (\w+)(?: AS \w+)? \(([^)]*)\)")
CALL = re.compile(r"\b(workmem_[a-z_]+)\(")
# Statements that touch no tenant table: the driver's and SQLAlchemy's connection setup, the
# login check, the advisory lock of the in-process worker and its liveness probe, the service
# key of a service transaction and a statement's own time bound.
# Also transaction control: a savepoint (the memory write's) goes where its transaction goes.
CONNECTION_LEVEL = re.compile(
    r"^(?:select pg_catalog\.version\(\)|select current_schema\(\)|show \w+|"
    r"(?:RELEASE |ROLLBACK TO )?SAVEPOINT \w+$|"
    r"select pg_catalog\.pg_type\.|SELECT rolname, rolsuper, rolbypassrls FROM pg_roles|"
    r"SELECT pg_try_advisory_lock|SELECT 1$|SELECT set_config\('(?:app\.service_key|statement_timeout)')",
    re.IGNORECASE,
)


def tenants_named(statement: Statement) -> set[str] | None:
    """The tenant values a statement filters or inserts by; None when it names none."""
    params = statement.params if isinstance(statement.params, dict) else {}
    names = TENANT_PARAM.findall(statement.sql)
    insert = INSERT_COLUMNS.match(statement.sql)
    if insert is not None and "tenant_id" in [c.strip() for c in insert.group(2).split(",")]:
        # One row's value, or each row's of a multi-row insert.
        rows = [name for name in params if MULTI_ROW_TENANT.fullmatch(name)]
        names.extend(rows or ["tenant_id"])
    tenants = {str(params[name]) for name in names}
    if "token" in params:  # the tenant token's first part is its tenant
        tenants.add(str(params["token"]).split(".", 1)[0])
    return tenants or None


@pytest.fixture
async def recorded(postgres: PostgresForTests, settings: Settings) -> AsyncIterator[Any]:
    urls = postgres.create_app_database("wmroute")
    url = urls.app
    log = StatementLog()
    database = Database.from_url(url, pool_size=4, on_connect=log.install)
    # Quotas on: their usage reads are part of the workload.
    app = create_app(
        settings.model_copy(
            update={"database_url": url, "quota_stored_bytes": 10**9, "quota_agent_sessions": 10**6}
        ),
        database=database,
    )
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://workmem.test"
        ) as http,
    ):
        keys = [await make_tenant(database, f"routed-{n}") for n in range(2)]
        with log.recording():
            claimed = await asyncio.gather(*(workload(http, k, database) for k in keys))
        # The delivery claim ran while both tenants' deliveries were waiting (and found some),
        # and attempts were recorded.
        assert sum(claimed) > 0, claimed
        assert any(s.sql.startswith("WITH settled") for s in log.recorded)
        yield Recorded(log.recorded, await function_bodies(urls.admin))
    await database.dispose()


@dataclass(frozen=True)
class Recorded:
    statements: list[Statement]
    bodies: dict[str, str]
    """Each ``workmem_*`` function's definition, by name."""


async def function_bodies(admin_url: str) -> dict[str, str]:
    owner = Database.from_url(admin_url, pool_size=1)
    try:
        async with owner.unscoped() as db:
            rows = (
                await db.execute(
                    text(
                        "SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p"
                        " WHERE p.pronamespace = 'public'::regnamespace"
                        " AND p.proname LIKE 'workmem\\_%'"
                    )
                )
            ).all()
    finally:
        await owner.dispose()
    return {str(name): str(body) for name, body in rows}


async def workload(http: httpx.AsyncClient, keys: TenantKeys, database: Database) -> int:
    """The tenant's requests, and a claim of the webhook deliveries they queued (of any tenant,
    as the delivery loop claims them) with its attempts recorded; answers how many it took."""
    admin = keys.headers(keys.admin)
    # A webhook subscription: every commit below writes its outbox row and its row of the
    # claim's queue (claimed below, never sent).
    hooked = await http.post(
        "/v1/webhooks",
        json={"url": "https://93.184.216.34/hooks", "events": ["archive.done", "memory.changed"]},
        headers=admin,
    )
    assert hooked.status_code == 201, hooked.text
    webhook_id = hooked.json()["id"]
    created = await http.post("/v1/sessions", json={"user_id": "u1"}, headers=keys.write)
    sid = created.json()["id"]
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    await asyncio.gather(
        *(
            http.post(
                f"/v1/sessions/{sid}/messages",
                json={"role": "user", "content": f"single {n}: fix app/main.py"},
                headers=keys.write,
            )
            for n in range(6)
        )
    )
    batch = {
        "messages": [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "main.py"},
            {"role": "assistant", "content": "Fixed. KeyError: email is gone."},
        ]
    }
    # Through /api/v1 with a tool part: under the lock on the session's name (created here,
    # then appended to).
    tool_part = {"type": "tool", "tool_id": "c1", "tool_name": "ls", "tool_output": "main.py"}
    for _ in range(2):
        added = await http.post(
            "/api/v1/sessions/routed-tools/messages",
            json={"role": "assistant", "parts": [tool_part]},
            headers=keys.write,
        )
        assert added.status_code == 200, added.text
    # Under an idempotency key, twice: the claim, the answer stored, then the replay.
    for _ in range(2):
        await http.post(
            f"/v1/sessions/{sid}/messages:batch",
            json=batch,
            headers={**keys.write, "Idempotency-Key": f"batch-{sid}"},
        )
    await asyncio.gather(
        *(
            http.post(
                f"/v1/sessions/{sid}/messages",
                json={"role": "user", "content": f"keyed {n}"},
                headers={**keys.write, "Idempotency-Key": f"single-{sid}-{n}"},
            )
            for n in range(3)
        )
    )
    await http.post(
        f"/v1/sessions/{sid}/commit",
        json={"keep_recent_count": 2},
        headers={**keys.write, "Idempotency-Key": f"commit-{sid}"},
    )
    admin = keys.headers(keys.admin)
    issued = await http.post("/v1/keys", json={"role": "reader"}, headers=admin)
    await http.get("/v1/keys", headers=admin)
    await http.delete(f"/v1/keys/{issued.json()['api_key_id']}", headers=admin)
    retracted = await http.post(f"/v1/sessions/{sid}/messages:retract", json={}, headers=keys.write)
    assert retracted.status_code == 200, retracted.text
    for _ in range(2):
        await http.post(
            f"/v1/sessions/{sid}/commit",
            json={"keep_recent_count": 1, "wait": True},
            headers=keys.write,
        )
        await http.post(
            f"/v1/sessions/{sid}/messages",
            json={"role": "user", "content": "and the migration?"},
            headers=keys.write,
        )
    # An idle agent session's next archive prepared ahead: its reads, the redaction check
    # and the checkpoint's write; the commit's job then reads the checkpoint and drops it.
    idle = await http.post(
        "/v1/sessions", json={"user_id": "u2", "keep_recent_count": 4}, headers=keys.write
    )
    idle_id = idle.json()["id"]
    appended = await http.post(
        f"/v1/sessions/{idle_id}/messages:batch",
        json={"messages": coding_session(30)},
        headers=keys.write,
    )
    assert appended.status_code == 201, appended.text
    preparer = Preparer(database, PREPARING, MemoryExtractor.offline(), idle_s=0)
    assert await preparer.prepare(keys.tenant_id, uuid.UUID(idle_id)) == "stored"
    await http.post(f"/v1/sessions/{idle_id}/commit", json={"wait": True}, headers=keys.write)
    pinned = await http.post(
        f"/v1/sessions/{sid}/pins", json={"text": "Never deploy on Fridays"}, headers=keys.write
    )
    assert pinned.status_code == 201, pinned.text
    await http.post(f"/v1/sessions/{sid}/pins", json={"message_seq": 1}, headers=keys.write)
    for path in (
        f"/v1/sessions/{sid}/pins",
        f"/v1/sessions/{sid}/history/search?q=app/main.py&limit=5",
        f"/v1/sessions/{sid}/context?token_budget=4000&clear_tool_results=0&fill=true",
        f"/v1/sessions/{sid}",
        "/v1/sessions",
        f"/v1/sessions/{sid}/messages",
        f"/v1/sessions/{sid}/archives",
        f"/v1/sessions/{sid}/archives/1",
        f"/v1/sessions/{sid}/working-memory",
        f"/v1/sessions/{sid}/working-memory/history",
        f"/v1/sessions/{sid}/context?token_budget=4000",
        f"/v1/sessions/{sid}/context?token_budget=4000&fill=true",
    ):
        response = await http.get(path, headers=keys.read)
        assert response.status_code == 200, (path, response.text)
    for path in ("/v1/webhooks", f"/v1/webhooks/{webhook_id}/deliveries"):
        response = await http.get(path, headers=admin)
        assert response.status_code == 200, (path, response.text)
    unpinned = await http.delete(
        f"/v1/sessions/{sid}/pins/{pinned.json()['pin_id']}", headers=keys.write
    )
    assert unpinned.status_code == 204
    await http.post(f"/v1/sessions/{sid}/compact?fill=true", headers=keys.write)
    deleted = await http.delete(f"/v1/sessions/{sid}", headers=keys.write)
    assert deleted.status_code == 204
    async with database.unscoped() as db:
        claims = await repository.claim_due(db, lease_s=60.0, limit=100)
    # The attempts of this tenant's, recorded as the loop records them (the other tenant may be
    # deleting its subscription): one delivered, the others retried.
    own = [claim for claim in claims if claim.tenant_id == keys.tenant_id]
    for n, claim in enumerate(own):
        then = Next("delivered", None) if n == 0 else Next("pending", 30.0)
        result = AttemptResult(datetime.now(UTC), 1, 200 if n == 0 else 503, None)
        async with database.tenant(claim.tenant_id) as db:
            assert await DeliveryJobService(db, claim.tenant_id).record(claim, result, then)
    unhooked = await http.delete(f"/v1/webhooks/{webhook_id}", headers=admin)
    assert unhooked.status_code == 204
    return len(claims)


async def test_every_statement_is_routed_by_one_tenant(recorded: Recorded) -> None:
    privileged = set(documented())
    routed = exempt = 0
    for statement in recorded.statements:
        called = set(CALL.findall(statement.sql))
        if called & privileged or CONNECTION_LEVEL.match(statement.sql):
            exempt += 1
            continue
        tenants = tenants_named(statement)
        params = statement.params if isinstance(statement.params, dict) else {}
        if "workmem_quota_lock" in called:
            tenants = {str(params["tenant_id"])}
        if statement.sql.startswith("SELECT pg_advisory_xact_lock") and "key" in params:
            # A tenant's own lock (its webhook subscriptions, a session name): the key ends
            # with its tenant.
            tenants = {str(params["key"]).rsplit(":", 1)[-1]}
        assert tenants is not None, f"no tenant_id filter: {statement.sql}"
        assert len(tenants) == 1, f"more than one tenant: {statement.sql} {tenants}"
        routed += 1
    assert routed > 150, routed
    assert exempt > 0
    print(f"statements routed by one tenant: {routed}; privileged or connection-level: {exempt}")  # noqa: T201 - the figure the scaling guide quotes


# Tables a tenant-distributed cluster keeps whole on every node (docs/scaling.md, "DDL"): small,
# with no tenant of their own or read across tenants by design.
REFERENCE_TABLES = frozenset(
    {
        "api_key_prefixes",
        "claimable_archives",
        "claimable_webhook_deliveries",
        "workmem_keyring",
        "auditor_logins",
    }
)
# The functions that act across tenants on purpose, outside requests: the operator's and the
# workers' maintenance (docs/scaling.md, "What changes"), each for its reason.
ACROSS_TENANTS = {
    "workmem_tenant_ids": "the tenant list that maintenance then walks tenant by tenant",
    "workmem_archive_queue": "the /metrics queue figures, a count over every node",
    "workmem_purge_idempotency_keys": "a periodic purge, run on every node",
    "workmem_requeue_failed": "the operator's re-queue, given a tenant from the tenant list",
}
TABLE_IN = re.compile(r"\b(?:FROM|JOIN|UPDATE|INTO)\s+(?:public\.)?(?![pv]_)(\w+)", re.IGNORECASE)
ONE_TENANT = re.compile(
    r"tenant_id\s*=\s*(?:[pv]_\w+|\(?(?:SELECT\s+)?workmem_verified_tenant\(\))"
    # or an insert whose tenant_id is one variable (routed by that value)
    r"|INSERT\s+INTO\s+\w+(?:\s+AS\s+\w+)?\s*\(\s*tenant_id\b[^)]*\)\s*"
    r"(?:SELECT|VALUES\s*\()\s*[pv]_\w+\s*,",
    re.IGNORECASE,
)


def distributed_statements(body: str) -> list[str]:
    """The statements of a function body that read or write a tenant-distributed table."""
    code = body.split("$function$")[1] if "$function$" in body else body
    found = []
    for statement in code.split(";"):
        tables = {name.lower() for name in TABLE_IN.findall(statement)}
        if tables and tables - REFERENCE_TABLES - {"now", "unnest", "requeued", "candidate"}:
            found.append(statement)
    return found


async def test_the_privileged_functions_of_the_workload_route_too(recorded: Recorded) -> None:
    """Inside each privileged function the workload called, every statement that reads or writes
    a distributed table is filtered by one tenant (a parameter, a variable found first in a
    reference table, or the verified tenant): the claims and the key lookup route like the rest."""
    called: set[str] = set()
    for sent in recorded.statements:
        called |= set(CALL.findall(sent.sql))
    privileged = (called & set(documented())) - set(ACROSS_TENANTS)
    claims = {"workmem_claim_archive", "workmem_claim_webhook_deliveries"}
    assert {"workmem_authenticate", *claims} <= privileged, privileged
    checked: dict[str, int] = {}
    for name in sorted(privileged):
        for body in distributed_statements(recorded.bodies[name]):
            assert ONE_TENANT.search(body), f"{name}: not routed by one tenant: {body}"
            checked[name] = checked.get(name, 0) + 1
    assert sum(checked.values()) >= 9, checked
    # Each claim reads and writes its tenant tables by one tenant only (its queue aside).
    assert all(checked.get(name, 0) >= 3 for name in claims), checked


def test_the_body_check_fails_on_a_statement_across_tenants() -> None:
    across = "BEGIN UPDATE archives a SET status = 'running' WHERE a.status = 'pending'; END"
    routed = "BEGIN UPDATE archives a SET x = 1 WHERE a.tenant_id = v_tenant_id; END"
    reference = "BEGIN SELECT q.tenant_id FROM claimable_archives q LIMIT 1; END"
    inserted = "BEGIN INSERT INTO messages AS m (tenant_id, seq) SELECT p_tenant_id, 1; END"
    copied = "BEGIN INSERT INTO messages (tenant_id, seq) SELECT o.tenant_id, 1 FROM pins o; END"
    assert [bool(ONE_TENANT.search(s)) for s in distributed_statements(across)] == [False]
    assert [bool(ONE_TENANT.search(s)) for s in distributed_statements(routed)] == [True]
    assert [bool(ONE_TENANT.search(s)) for s in distributed_statements(inserted)] == [True]
    assert [bool(ONE_TENANT.search(s)) for s in distributed_statements(copied)] == [False]
    assert distributed_statements(reference) == []


def test_the_scaling_guide_distributes_every_table() -> None:
    """docs/scaling.md's DDL names every table of the schema, distributed or kept whole."""
    from pathlib import Path

    import app.models  # noqa: F401 - registers every table
    from app.db import Base

    guide = (Path(__file__).resolve().parent.parent / "docs" / "scaling.md").read_text()
    ddl = guide.split("```sql", 1)[1].split("```", 1)[0]
    named = set(re.findall(r"'([a-z_]+)'", ddl)) - {"tenant_id", "tenants", "p_tenant_id"}
    distributed = named - REFERENCE_TABLES
    tables = set(Base.metadata.tables) - {"tenants"}
    assert named >= REFERENCE_TABLES
    assert distributed | (REFERENCE_TABLES & tables) == tables, tables ^ named
