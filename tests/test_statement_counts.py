"""Statements per request on the read paths: a fixed number, whatever the data behind them.

Each request is counted after a warm-up (so the credential is cached), through a cursor that
sees ORM, Core and driver-level statements alike. The first statement of every request is the
tenant setup of its transaction.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from app.config import Settings
from tests.conftest import TenantKeys, make_tenant
from tests.support.postgres import PostgresForTests
from tests.support.statements import StatementLog, recorded_app


@dataclass
class Counted:
    http: httpx.AsyncClient
    log: StatementLog
    keys: TenantKeys

    async def statements(self, path: str) -> list[str]:
        await self.http.get(path, headers=self.keys.read)  # warm-up: the key is cached after it
        with self.log.recording() as statements:
            response = await self.http.get(path, headers=self.keys.read)
        assert response.status_code == 200, response.text
        return statements


@pytest.fixture(scope="module")
async def counted(postgres: PostgresForTests, settings: Settings) -> AsyncIterator[Counted]:
    async with recorded_app(postgres, settings, "wmcount") as (http, log, database):
        yield Counted(http, log, await make_tenant(database, "counted"))


async def session_with_archives(counted: Counted, archives: int) -> str:
    http, keys = counted.http, counted.keys
    response = await http.post("/v1/sessions", json={}, headers=keys.write)
    agent_session_id: str = response.json()["id"]
    for round_ in range(archives):
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": f"Round {round_}: please fix app/models/user.py"},
            {"role": "assistant", "content": f"Done with round {round_}."},
        ]
        response = await http.post(
            f"/v1/sessions/{agent_session_id}/messages:batch",
            json={"messages": messages},
            headers=keys.write,
        )
        assert response.status_code == 201, response.text
        response = await http.post(
            f"/v1/sessions/{agent_session_id}/commit",
            json={"keep_recent_count": 0, "wait": True},
            headers=keys.write,
        )
        assert response.json()["status"] == "done", response.text
    response = await http.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "user", "content": "And now the migration?"},
        headers=keys.write,
    )
    assert response.status_code == 201, response.text
    return agent_session_id


@pytest.fixture(scope="module")
async def sessions(counted: Counted) -> list[str]:
    return [await session_with_archives(counted, archives) for archives in (3, 1, 0, 2, 4)]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/sessions?limit=50", 2),
        ("/v1/sessions/{id}", 2),
        ("/v1/sessions/{id}/archives", 2),
        ("/v1/sessions/{id}/archives/1", 6),  # and its retries and clears (audit trail)
        ("/v1/sessions/{id}/working-memory", 3),
        ("/v1/sessions/{id}/working-memory/history", 2),
        # The pins in force are one indexed read.
        ("/v1/sessions/{id}/context?token_budget=8000", 6),
        # Fill reads the covered messages it needs once, newest first.
        ("/v1/sessions/{id}/context?token_budget=8000&fill=true", 7),
        ("/v1/sessions/{id}/context?token_budget=8000&fill=true&clear_tool_results=1", 7),
        ("/v1/sessions/{id}/pins", 3),
        # The tenant, the agent session, the search's own time bound, the search.
        ("/v1/sessions/{id}/history/search?q=migration", 4),
        ("/v1/sessions/{id}/messages", 3),
        ("/v1/sessions/{id}/context?token_budget=8000&recall=fix+the+migration", 7),
        ("/v1/memories?limit=50", 2),
        ("/v1/memories/search?q=fix+the+models", 2),
    ],
)
async def test_statements_per_read_request(
    counted: Counted, sessions: list[str], path: str, expected: int
) -> None:
    statements = await counted.statements(path.format(id=sessions[0]))
    assert statements[0].startswith("SELECT set_config('role'") or "set_config" in statements[0]
    assert len(statements) == expected, "\n".join(statements)


async def test_listing_costs_the_same_for_one_session_or_five(
    counted: Counted, sessions: list[str]
) -> None:
    many = await counted.statements("/v1/sessions?limit=50")
    one = await counted.statements("/v1/sessions?limit=1")
    assert len(many) == len(one) == 2


async def test_context_reads_do_not_grow_with_archives(
    counted: Counted, sessions: list[str]
) -> None:
    few = await counted.statements(f"/v1/sessions/{sessions[1]}/context?token_budget=8000")
    more = await counted.statements(f"/v1/sessions/{sessions[4]}/context?token_budget=8000")
    assert len(few) == len(more)
    # The index of archives never loads the overview Markdown of 20 archives.
    [index] = [statement for statement in more if "archives.abstract" in statement]
    assert "overview" not in index


async def tool_append(counted: Counted, session_id: str) -> list[str]:
    """The statements of one /api/v1 append with a tool part, after a warm-up append."""
    body = {
        "role": "assistant",
        "parts": [{"type": "tool", "tool_id": "call_1", "tool_name": "ls", "tool_output": "ok"}],
    }
    path = f"/api/v1/sessions/{session_id}/messages"
    response = await counted.http.post(path, json=body, headers=counted.keys.write)
    assert response.status_code == 200, response.text
    with counted.log.recording() as statements:
        response = await counted.http.post(path, json=body, headers=counted.keys.write)
    assert response.status_code == 200, response.text
    return statements


async def test_an_append_with_tool_parts_costs_the_same_whatever_the_session_holds(
    counted: Counted,
) -> None:
    """The tenant setup, the lock on the session's name, the session, its call ids, the
    append: one transaction, five statements, however many calls the session holds."""
    few = await tool_append(counted, "tools-few")
    for _ in range(6):
        await tool_append(counted, "tools-many")
    more = await tool_append(counted, "tools-many")
    assert len(few) == len(more) == 5, "\n".join(more)
    assert "set_config" in more[0]
    assert more[1].startswith("SELECT pg_advisory_xact_lock")
    assert "workmem_append(" in more[4]
