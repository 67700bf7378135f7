"""Every statement of a mixed workload names one tenant: what a tenant-distributed cluster needs.

A Citus cluster distributed by ``tenant_id`` (docs/scaling.md) routes a statement to one node
when each table it reads or writes is filtered by (or inserted with) one ``tenant_id`` value.
This records every statement the API and the archive jobs send during appends (single, batched,
grouped), a retraction, commits, archive processing (with its webhook outbox rows), context
(with pins and clearing), expand, working memory and history, pins, history search, listing and
deletion, idempotent retries, quotas, a tenant admin's keys, webhook subscriptions and their
deliveries, across two tenants, and checks each: a ``tenant_id`` equality or insert whose values
are all one tenant, the per-transaction tenant setup and the append function (both named by
their tenant token), the quota lock (called with its tenant), or one of the listed privileged
functions and connection-level statements.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager

from app.config import Settings
from app.db import Database
from app.main import create_app
from tests.conftest import TenantKeys, make_tenant
from tests.support.postgres import PostgresForTests
from tests.support.privileged import documented
from tests.support.statements import Statement, StatementLog

TENANT_PARAM = re.compile(r"tenant_id\s*=\s*%\((\w+)\)s")
INSERT_COLUMNS = re.compile(r"^INSERT INTO (\w+)(?: AS \w+)? \(([^)]*)\)")
CALL = re.compile(r"\b(workmem_[a-z_]+)\(")
# Statements that touch no tenant table: the driver's and SQLAlchemy's connection setup, the
# login check, the advisory lock of the in-process worker and its liveness probe, the service
# key of a service transaction and a statement's own time bound.
CONNECTION_LEVEL = re.compile(
    r"^(?:select pg_catalog\.version\(\)|select current_schema\(\)|show \w+|"
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
        names.append("tenant_id")
    tenants = {str(params[name]) for name in names}
    if "token" in params:  # the tenant token's first part is its tenant
        tenants.add(str(params["token"]).split(".", 1)[0])
    return tenants or None


@pytest.fixture
async def recorded(postgres: PostgresForTests, settings: Settings) -> AsyncIterator[Any]:
    url = postgres.create_app_database("wmroute").app
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
            await asyncio.gather(*(workload(http, k) for k in keys))
        yield log.recorded
    await database.dispose()


async def workload(http: httpx.AsyncClient, keys: TenantKeys) -> None:
    admin = keys.headers(keys.admin)
    # A webhook subscription: every commit below writes its outbox row (never sent here).
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
    unhooked = await http.delete(f"/v1/webhooks/{webhook_id}", headers=admin)
    assert unhooked.status_code == 204


async def test_every_statement_is_routed_by_one_tenant(recorded: list[Statement]) -> None:
    privileged = set(documented())
    routed = exempt = 0
    for statement in recorded:
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
