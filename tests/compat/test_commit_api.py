"""Commit, its task and the archive it makes, through /api/v1: keep_recent_count bounds,
accepted and skipped answers, task states through to completed and failed, archive expand."""

from __future__ import annotations

import uuid

import httpx
import pytest

from app.archives.generation import WorkingMemoryGenerator
from app.compat.openviking.ids import parse_task_id
from app.db import Database
from app.llm.fakes import ScriptedChatModel
from app.llm.ports import PermanentModelError
from tests.compat.helpers import (
    API,
    append,
    assistant,
    commit,
    failed,
    finished_task,
    ok,
    user,
    validation_locs,
)
from tests.conftest import AppFactory, TenantKeys, make_tenant

TOOL_PART = {
    "type": "tool",
    "tool_id": "call_1",
    "tool_name": "read_file",
    "tool_input": {"path": "app/models/user.py"},
    "tool_output": "KeyError: 'email' at line 42",
    "tool_status": "completed",
}


@pytest.mark.parametrize(
    ("keep", "accepted"), [(-1, False), (0, True), (10_000, True), (10_001, False)]
)
async def test_keep_recent_count_bounds(
    client: httpx.AsyncClient, tenant: TenantKeys, keep: int, accepted: bool
) -> None:
    await append(client, tenant.write, "bounds", user("one"), user("two"))
    response = await client.post(
        f"{API}/sessions/bounds/commit", json={"keep_recent_count": keep}, headers=tenant.write
    )
    if not accepted:
        error = failed(response, "INVALID_ARGUMENT", 400)
        assert validation_locs(error) == [["body", "keep_recent_count"]]
        state = ok(await client.get(f"{API}/sessions/bounds", headers=tenant.read))
        assert state["commit_count"] == 0
        return
    result = ok(response)
    assert result["status"] == ("accepted" if keep == 0 else "skipped")


async def test_an_accepted_commit(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await append(client, tenant.write, "to-commit", user("a"), assistant("b"), user("c"))
    result = await commit(client, tenant.write, "to-commit", keep=1)
    listed = await client.get(
        "/v1/sessions", params={"external_id": "to-commit"}, headers=tenant.read
    )
    agent_session_id = uuid.UUID(listed.json()["items"][0]["id"])
    assert result == {
        "session_id": "to-commit",
        "status": "accepted",
        "task_id": f"commit-{agent_session_id.hex}-1",
        "archive_uri": "viking://session/to-commit/history/archive_001",
        "archive_id": "archive_001",
        "archived": True,
        "reason": None,
    }
    archives = await client.get(f"/v1/sessions/{agent_session_id}/archives", headers=tenant.read)
    [archive] = archives.json()["items"]
    assert (archive["start_seq"], archive["end_seq"], archive["status"]) == (1, 2, "pending")

    # The worker is off in this app: the task is pending, and its archive not expandable yet.
    task = ok(await client.get(f"{API}/tasks/{result['task_id']}", headers=tenant.read))
    assert (task["status"], task["result"], task["error"]) == ("pending", None, None)
    assert (task["task_type"], task["resource_id"]) == ("session_commit", "to-commit")
    assert task["created_at"] == task["updated_at"] > 0
    pending = await client.get(
        f"{API}/sessions/to-commit/archives/archive_001", headers=tenant.read
    )
    failed(pending, "NOT_FOUND", 404)


async def test_a_commit_without_a_body_archives_everything(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    await append(client, tenant.write, "no-body", user("a"), assistant("b"))
    result = ok(await client.post(f"{API}/sessions/no-body/commit", headers=tenant.write))
    assert result["status"] == "accepted"
    state = ok(await client.get(f"{API}/sessions/no-body", headers=tenant.read))
    assert (state["message_count"], state["keep_recent_count"]) == (0, 0)


async def test_skipped_commits(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    ok(await client.post(f"{API}/sessions", json={"session_id": "idle"}, headers=tenant.write))
    empty = await commit(client, tenant.write, "idle")
    assert empty == {
        "session_id": "idle",
        "status": "skipped",
        "task_id": None,
        "archive_uri": None,
        "archive_id": None,
        "archived": False,
        "reason": "no_messages",
    }
    await append(client, tenant.write, "idle", user("only one"))
    kept = await commit(client, tenant.write, "idle", keep=5)
    assert (kept["status"], kept["reason"], kept["archived"]) == (
        "skipped",
        "all_within_keep_window",
        False,
    )


async def test_commit_and_read_of_missing_things(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    missing = await client.post(f"{API}/sessions/ghost/commit", json={}, headers=tenant.write)
    assert failed(missing, "NOT_FOUND", 404)["details"] == {"resource": "ghost", "type": "session"}
    await append(client, tenant.write, "real", user("x"))
    for archive_id in ("archive_001", "archive_0", "latest", "archive_99999999999"):
        response = await client.get(
            f"{API}/sessions/real/archives/{archive_id}", headers=tenant.read
        )
        error = failed(response, "NOT_FOUND", 404)
        assert error["details"] == {"resource": archive_id, "type": "archive"}
    for task_id in ("nonsense", f"commit-{uuid.uuid4().hex}-1"):
        response = await client.get(f"{API}/tasks/{task_id}", headers=tenant.read)
        assert failed(response, "NOT_FOUND", 404)["details"] == {
            "resource": task_id,
            "type": "task",
        }


async def test_a_commits_task_completes_and_its_archive_expands(
    own_database: Database, app_client: AppFactory
) -> None:
    keys = await make_tenant(own_database)
    async with app_client(own_database, worker_enabled=True, worker_poll_s=0.05) as http:
        await append(
            http,
            keys.write,
            "worked",
            user("Fix the crash in app/models/user.py. Never touch prod."),
            {"role": "assistant", "parts": [{"type": "text", "text": "Reading it."}, TOOL_PART]},
            assistant("The fix is a default for email."),
            user("Is a migration needed?"),
        )
        accepted = await commit(http, keys.write, "worked", keep=1)
        task = await finished_task(http, keys.read, accepted["task_id"])
        assert task["status"] == "completed", task
        assert task["error"] is None
        assert task["updated_at"] >= task["created_at"]
        assert task["result"] == {
            "session_id": "worked",
            "archive_id": "archive_001",
            "archive_uri": "viking://session/worked/history/archive_001",
            "memories_extracted": {},
            "token_usage": {
                "llm": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                "embedding": {"total_tokens": 0},
                "total": {"total_tokens": 0},
            },
        }

        archive = ok(
            await http.get(f"{API}/sessions/worked/archives/archive_001", headers=keys.read)
        )
        assert archive["archive_id"] == "archive_001"
        assert archive["overview"].startswith("# Working Memory")
        assert "app/models/user.py" in archive["overview"]
        assert archive["abstract"]
        assert [(m["role"], [p["type"] for p in m["parts"]]) for m in archive["messages"]] == [
            ("user", ["text"]),
            ("assistant", ["text", "tool"]),
            ("assistant", ["text"]),
        ]
        assert archive["messages"][1]["parts"][1] == {**TOOL_PART, "tool_uri": "", "skill_uri": ""}
        resolved = parse_task_id(accepted["task_id"])
        assert resolved is not None
        wm = await http.get(f"/v1/sessions/{resolved[0]}/working-memory", headers=keys.read)
        assert archive["overview"] == wm.json()["markdown"]


async def test_a_failed_archive_is_a_failed_task(
    own_database: Database, app_client: AppFactory
) -> None:
    keys = await make_tenant(own_database)
    chat = ScriptedChatModel([PermanentModelError("the model refused", code="bad", status=400)])
    generator = WorkingMemoryGenerator(chat, fallback="none")
    async with app_client(
        own_database, generator=generator, worker_enabled=True, worker_poll_s=0.05
    ) as http:
        await append(http, keys.write, "doomed", user("a"), assistant("b"))
        accepted = await commit(http, keys.write, "doomed")
        task = await finished_task(http, keys.read, accepted["task_id"])
        assert (task["status"], task["result"]) == ("failed", None)
        assert task["error"].startswith("generate: ")
        assert "the model refused" in task["error"]
        expand = await http.get(f"{API}/sessions/doomed/archives/archive_001", headers=keys.read)
        failed(expand, "NOT_FOUND", 404)
        await append(http, keys.write, "doomed", user("c"))
        context = ok(await http.get(f"{API}/sessions/doomed/context", headers=keys.read))
        # The failed archive's messages are sent raw, after no summary.
        assert context["latest_archive_overview"] == ""
        assert [m["parts"][0]["text"] for m in context["messages"]] == ["a", "b", "c"]
        assert context["stats"] == {
            "totalArchives": 1,
            "includedArchives": 0,
            "droppedArchives": 0,
            "failedArchives": 1,
            "activeTokens": context["estimatedTokens"],
            "archiveTokens": 0,
        }
