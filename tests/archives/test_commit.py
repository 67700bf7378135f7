"""Commit phase 1: skips, the split rule, O(1) in archived messages, concurrency (DESIGN 6.1)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.db import Database
from app.sessions.service import AgentSessionService
from tests.conftest import TenantKeys
from tests.support.api import append, assistant, calls, commit, create_session, result, user


async def session_state(
    client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str
) -> dict[str, Any]:
    response = await client.get(f"/v1/sessions/{agent_session_id}", headers=keys.read)
    state: dict[str, Any] = response.json()
    return state


async def test_skips_and_keep_window(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    agent_session_id = await create_session(client, tenant)
    empty = await commit(client, tenant, agent_session_id)
    assert empty.status_code == 200
    assert empty.json()["status"] == "skipped"
    assert empty.json()["reason"] == "no_messages"

    await append(client, tenant, agent_session_id, [user("a"), assistant("b"), user("c")])
    within = await commit(client, tenant, agent_session_id, keep_recent_count=3)
    assert (within.json()["status"], within.json()["reason"]) == (
        "skipped",
        "all_within_keep_window",
    )
    state = await session_state(client, tenant, agent_session_id)
    assert state["keep_recent_count"] == 3
    assert state["pending_tokens"] == 0
    assert state["archive_count"] == 0

    accepted = await commit(client, tenant, agent_session_id, keep_recent_count=2)
    assert accepted.status_code == 202
    body = accepted.json()
    assert body["status"] == "accepted"
    assert (body["archive"]["start_seq"], body["archive"]["end_seq"]) == (1, 1)
    assert body["archive"]["status"] == "pending"
    assert body["archive"]["tail_message_count"] == 2
    assert body["live_message_count"] == 2
    state = await session_state(client, tenant, agent_session_id)
    assert state["archive_count"] == 1
    assert state["newest_archive"]["status"] == "pending"


@pytest.mark.parametrize("keep", [-1, 10_001, "x"])
async def test_keep_recent_count_out_of_range(
    client: httpx.AsyncClient, tenant: TenantKeys, keep: object
) -> None:
    agent_session_id = await create_session(client, tenant)
    await append(client, tenant, agent_session_id, [user("a")])
    response = await commit(client, tenant, agent_session_id, keep_recent_count=keep)
    assert response.status_code == 422
    assert (await session_state(client, tenant, agent_session_id))["archive_count"] == 0


async def test_keep_recent_count_bounds_accepted(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    await append(client, tenant, agent_session_id, [user("a")])
    assert (await commit(client, tenant, agent_session_id, keep_recent_count=10_000)).json()[
        "reason"
    ] == "all_within_keep_window"
    assert (await commit(client, tenant, agent_session_id, keep_recent_count=0)).status_code == 202


# u1 a(c1,c2) t1 t2 a u2 a(c3) t3 u3 : seqs 1..9, two tool groups (2-4) and (7-8).
CONVERSATION = [
    user("u1"),
    calls("c1", "c2"),
    result("c1"),
    result("c2"),
    assistant("a"),
    user("u2"),
    calls("c3"),
    result("c3"),
    user("u3"),
]
GROUPS = [(2, 4), (7, 8)]


@pytest.mark.parametrize("keep", range(len(CONVERSATION)))
async def test_tail_never_starts_inside_a_tool_group(
    client: httpx.AsyncClient, tenant: TenantKeys, keep: int
) -> None:
    agent_session_id = await create_session(client, tenant)
    await append(client, tenant, agent_session_id, CONVERSATION)
    response = await commit(client, tenant, agent_session_id, keep_recent_count=keep)
    asked_end = len(CONVERSATION) - keep
    if response.json()["status"] == "skipped":
        # Only possible when every split point up to the asked one cuts a group.
        assert all(any(lo <= s < hi for lo, hi in GROUPS) for s in range(1, asked_end + 1))
        return
    end_seq = response.json()["archive"]["end_seq"]
    assert end_seq <= asked_end, "a commit keeps at least what was asked"
    for lo, hi in GROUPS:
        assert not lo <= end_seq < hi, f"split at {end_seq} cuts the group {lo}-{hi}"
    expected = max(s for s in range(1, asked_end + 1) if not any(lo <= s < hi for lo, hi in GROUPS))
    assert end_seq == expected
    tail = response.json()["archive"]["tail_start_seq"]
    if tail is not None:
        assert CONVERSATION[tail - 1]["role"] != "tool"


async def test_open_tool_call_stays_in_the_tail(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    await append(client, tenant, agent_session_id, [user("u1"), assistant("a1"), calls("c9")])
    response = await commit(client, tenant, agent_session_id, keep_recent_count=0)
    assert response.json()["archive"]["end_seq"] == 2
    await append(client, tenant, agent_session_id, [result("c9")])
    state = await session_state(client, tenant, agent_session_id)
    assert state["live_message_count"] == 2


async def test_commit_over_10000_messages_touches_no_message_row(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    for start in range(0, 10_000, 500):
        await append(
            client,
            tenant,
            agent_session_id,
            [user(f"message {n}") for n in range(start, start + 500)],
        )

    async def fingerprint() -> tuple[int, str]:
        async with database.tenant(tenant.tenant_id) as db:
            row = (
                await db.execute(
                    text(
                        "SELECT count(*), md5(string_agg(xmin::text || ctid::text, ',' ORDER BY seq))"
                        " FROM messages WHERE agent_session_id = :id"
                    ),
                    {"id": agent_session_id},
                )
            ).one()
        return int(row[0]), str(row[1])

    before = await fingerprint()
    response = await commit(client, tenant, agent_session_id, keep_recent_count=10)
    assert response.status_code == 202
    assert response.json()["archive"]["end_seq"] == 9_990
    assert await fingerprint() == before
    state = await session_state(client, tenant, agent_session_id)
    assert state["live_message_count"] == 10
    assert state["message_count"] == 10_000


async def test_concurrent_commits_make_consecutive_disjoint_archives(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    await append(client, tenant, agent_session_id, [user(f"m{n}") for n in range(40)])

    async def appender() -> None:
        for n in range(20):
            await append(client, tenant, agent_session_id, [user(f"late {n}"), assistant("ok")])

    async def committer() -> list[int]:
        codes = []
        for _ in range(6):
            response = await commit(client, tenant, agent_session_id, keep_recent_count=3)
            codes.append(response.status_code)
        return codes

    results = await asyncio.gather(appender(), committer(), committer(), committer())
    assert all(code in (200, 202) for codes in results[1:] for code in codes or [])
    listed = await client.get(
        f"/v1/sessions/{agent_session_id}/archives", params={"limit": 200}, headers=tenant.read
    )
    archives = sorted(listed.json()["items"], key=lambda a: a["archive_seq"])
    assert [a["archive_seq"] for a in archives] == list(range(1, len(archives) + 1))
    expected_start = 1
    for archive in archives:
        assert archive["start_seq"] == expected_start
        assert archive["end_seq"] >= archive["start_seq"]
        expected_start = archive["end_seq"] + 1
    state = await session_state(client, tenant, agent_session_id)
    assert state["message_count"] == 80
    assert state["live_message_count"] == 80 - (expected_start - 1)


async def test_pending_tokens_after_racing_appends_and_commits(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant, keep_recent_count=4)

    async def appender(worker: int) -> None:
        for n in range(15):
            messages = [user(f"w{worker} {n} " + "word " * n)]
            if n % 4 == 0:
                messages += [calls(f"c{worker}-{n}"), result(f"c{worker}-{n}")]
            await append(client, tenant, agent_session_id, messages)

    async def committer(keep: int) -> None:
        for _ in range(5):
            await commit(client, tenant, agent_session_id, keep_recent_count=keep)
            await asyncio.sleep(0)

    await asyncio.gather(appender(1), appender(2), committer(0), committer(3), committer(7))
    async with database.tenant(tenant.tenant_id) as db:
        drift = await AgentSessionService(db, tenant.principal()).check_pending(
            uuid.UUID(agent_session_id), repair=False
        )
    assert drift.stored == drift.recomputed
    listed = await client.get(
        f"/v1/sessions/{agent_session_id}/archives", params={"limit": 200}, headers=tenant.read
    )
    covered = [
        seq for a in listed.json()["items"] for seq in range(a["start_seq"], a["end_seq"] + 1)
    ]
    assert len(covered) == len(set(covered)), "no message is archived twice"
    state = await session_state(client, tenant, agent_session_id)
    assert sorted(covered) == list(
        range(1, state["message_count"] - state["live_message_count"] + 1)
    )


async def pending_drift(
    database: Database, tenant: TenantKeys, agent_session_id: str
) -> tuple[int, int]:
    async with database.tenant(tenant.tenant_id) as db:
        drift = await AgentSessionService(db, tenant.principal()).check_pending(
            uuid.UUID(agent_session_id), repair=False
        )
    return drift.stored, drift.recomputed


@pytest.mark.parametrize("keep", [1, 2])
async def test_a_commit_skipped_for_a_tool_group_keeps_pending_tokens_exact(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys, keep: int
) -> None:
    """The tool group fills the keep window, so nothing can be archived: the skip must count its
    head as pending (it is outside the window), or every later append drifts."""
    agent_session_id = await create_session(client, tenant, keep_recent_count=10)
    await append(client, tenant, agent_session_id, [calls("c1"), result("c1")])
    response = await commit(client, tenant, agent_session_id, keep_recent_count=keep)
    assert response.json()["status"] == "skipped"
    assert response.json()["reason"] == "all_within_keep_window"
    stored, recomputed = await pending_drift(database, tenant, agent_session_id)
    assert stored == recomputed
    assert response.json()["pending_tokens"] == stored
    await append(client, tenant, agent_session_id, [user("and one more")])
    stored, recomputed = await pending_drift(database, tenant, agent_session_id)
    assert stored == recomputed > 0
