"""Every retry and clear of a failed archive leaves an audit row: through the API (the key that
asked and its reason, shown with the archive) and from the command line (the operator), and
none for a refused one."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import psycopg
from psycopg.rows import dict_row
from typer.testing import CliRunner

from app.archives.generation import WorkingMemoryGenerator
from app.cli import cli
from app.db import Database
from app.llm.fakes import ScriptedChatModel
from app.llm.ports import PermanentModelError
from tests.audit.documented import documented_queries, for_driver
from tests.conftest import AppFactory, TenantKeys, make_tenant
from tests.memories.helpers import rows
from tests.support.api import append, commit, create_session, user
from tests.support.postgres import DatabaseUrls

runner = CliRunner()


def _failing() -> WorkingMemoryGenerator:
    errors = [PermanentModelError("rejected", code="client_error", status=400) for _ in range(9)]
    return WorkingMemoryGenerator(ScriptedChatModel(list(errors)), fallback="none")


async def _failed_archive(http: httpx.AsyncClient, keys: TenantKeys, text: str) -> str:
    agent_session_id = await create_session(http, keys)
    await append(http, keys, agent_session_id, [user(text)])
    response = await commit(http, keys, agent_session_id, keep_recent_count=0, wait=True)
    assert response.json()["status"] == "failed", response.text
    return agent_session_id


async def _actions(database: Database, keys: TenantKeys, sid: str) -> list[dict[str, Any]]:
    return await rows(
        database,
        "SELECT archive_seq, action, actor, api_key_id, reason FROM archive_actions"
        " WHERE agent_session_id = :sid ORDER BY action_id",
        tenant_id=keys.tenant_id,
        sid=uuid.UUID(sid),
    )


async def test_retry_and_clear_through_the_api_record_the_key_and_reason(
    database: Database, app_client: AppFactory
) -> None:
    keys = await make_tenant(database)
    async with app_client(database, generator=_failing()) as http:
        sid = await _failed_archive(http, keys, "the first part")
        base = f"/v1/sessions/{sid}/archives/1"
        refused = await http.post(f"{base}:clear", headers=keys.read)
        assert refused.status_code == 403
        retried = await http.post(
            f"{base}:retry", json={"reason": "the model's key was renewed"}, headers=keys.write
        )
        assert retried.status_code == 200, retried.text
        # The next commit's wait runs the re-queued archive first: it fails again.
        await append(http, keys, sid, [user("the second part")])
        again = await commit(http, keys, sid, keep_recent_count=0, wait=True)
        assert again.json()["status"] == "failed", again.text
        bad = await http.post(f"{base}:clear", json={"reason": ""}, headers=keys.write)
        assert bad.status_code == 422, bad.text
        cleared = await http.post(f"{base}:clear", headers=keys.write)
        assert cleared.status_code == 200, cleared.text
        twice = await http.post(f"{base}:clear", json={"reason": "again"}, headers=keys.write)
        assert twice.status_code == 409
        expanded = (await http.get(base, headers=keys.read)).json()
        listed = await http.get("/v1/keys", headers=keys.headers(keys.admin))
    writer_id = next(k["api_key_id"] for k in listed.json()["items"] if k["role"] == "writer")
    assert [
        (a["action"], a["actor"], a["api_key_id"], a["reason"]) for a in expanded["actions"]
    ] == [
        ("retry", "api_key", writer_id, "the model's key was renewed"),
        ("clear", "api_key", writer_id, None),
    ]
    assert all(a["created_at"] for a in expanded["actions"])
    stored = await _actions(database, keys, sid)
    assert [(r["action"], str(r["api_key_id"])) for r in stored] == [
        ("retry", writer_id),
        ("clear", writer_id),
    ]


async def _cli(args: list[str], database_url: str) -> Any:
    """The command, on a thread of its own (it runs its own event loop)."""
    env = {"DATABASE_URL": database_url}
    return await asyncio.to_thread(runner.invoke, cli, args, env=env)


async def test_the_operators_retry_and_clear_are_recorded(
    database: Database,
    database_url: str,
    database_urls: DatabaseUrls,
    app_client: AppFactory,
) -> None:
    keys = await make_tenant(database)
    async with app_client(database, generator=_failing()) as http:
        sid = await _failed_archive(http, keys, "a part that fails")
    tenant = str(keys.tenant_id)
    retried = await _cli(
        ["archives", "retry", "--tenant", tenant, "--agent-session", sid, "--archive-seq", "1"],
        database_url,
    )
    assert retried.exit_code == 0, retried.output
    assert json.loads(retried.output)["requeued"] == [
        {"tenant_id": tenant, "agent_session_id": sid, "archive_seq": 1}
    ]
    clear = ["archives", "clear", "--tenant", tenant, "--agent-session", sid]
    pending = await _cli([*clear, "--archive-seq", "1"], database_url)
    assert pending.exit_code == 1
    assert "only failed ones clear" in pending.output
    assert len(pending.output.strip().splitlines()) == 1
    unknown = await _cli([*clear, "--archive-seq", "7"], database_url)
    assert unknown.exit_code == 1
    assert "not found" in unknown.output
    # The re-queued archive fails again; the operator sets it aside.
    async with app_client(database, generator=_failing()) as http:
        await append(http, keys, sid, [user("more")])
        await commit(http, keys, sid, keep_recent_count=0, wait=True)
    cleared = await _cli([*clear, "--archive-seq", "1", "--reason", "model retired"], database_url)
    assert cleared.exit_code == 0, cleared.output
    assert json.loads(cleared.output)["cleared"]["status"] == "cleared"
    stored = await _actions(database, keys, sid)
    assert [(r["action"], r["actor"], r["api_key_id"], r["reason"]) for r in stored] == [
        ("retry", "operator", None, None),
        ("clear", "operator", None, "model retired"),
    ]
    # The documented audit query reads the same rows.
    sql = documented_queries()["archive_actions"]
    async with database.tenant(keys.tenant_id) as db:
        connection = await db.connection()
        result = await connection.exec_driver_sql(for_driver(sql), {"agent_session_id": sid})
        documented = [dict(row._mapping) for row in result.all()]
    assert [(r["archive_seq"], r["action"], r["actor"]) for r in documented] == [
        (1, "retry", "operator"),
        (1, "clear", "operator"),
    ]
    # An auditor of the tenant reads them; one of another tenant does not.
    env = {"DATABASE_URL": database_url, "WORKMEM_ADMIN_DATABASE_URL": database_urls.admin}
    other = await make_tenant(database)
    seen = {}
    for owner in (keys, other):
        created = await asyncio.to_thread(
            runner.invoke, cli, ["auditors", "create", "--tenant", str(owner.tenant_id)], env=env
        )
        assert created.exit_code == 0, created.output
        login = json.loads(created.output)
        with psycopg.connect(str(login["connection_url"]), row_factory=dict_row) as auditor:
            found = auditor.execute(for_driver(sql).encode(), {"agent_session_id": sid})
            seen[owner.tenant_id] = [(r["action"], r["reason"]) for r in found.fetchall()]
        dropped = await asyncio.to_thread(
            runner.invoke,
            cli,
            ["auditors", "drop", str(login["login_role"]), "--tenant", str(owner.tenant_id)],
            env=env,
        )
        assert dropped.exit_code == 0, dropped.output
    assert seen == {
        keys.tenant_id: [("retry", None), ("clear", "model retired")],
        other.tenant_id: [],
    }
