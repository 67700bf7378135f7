"""Turn-aware retention through the commit of /v1 and of /api/v1, in process and against the
real ``workmem serve`` process: the kept tail, the counters, and bad requests storing nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from openviking_sdk import SyncHTTPClient

from tests.compat import helpers as ov
from tests.conftest import TenantKeys
from tests.support.api import append, assistant, calls, commit, create_session, result, user
from tests.support.servers import Server

# Turns: [u1 a] [u2 c(c1) t(c1) a]: seqs 1..6; the newest turn's steps are 4-5 (the tool
# group) and 6.
CONVERSATION = [
    user("first question"),
    assistant("first answer"),
    user("second question"),
    calls("c1"),
    result("c1"),
    assistant("second answer"),
]


async def state(client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str) -> Any:
    response = await client.get(f"/v1/sessions/{agent_session_id}", headers=keys.read)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize(
    ("body", "tail_start"),
    [
        ({}, None),
        ({"keep_recent_turn_count": 1}, 3),
        ({"keep_recent_turn_count": 2}, None),
        ({"keep_recent_turn_count": 0}, 0),
        ({"keep_recent_turn_count": 1, "retained_message_token_budget": 1}, 6),
        (
            {
                "keep_recent_turn_count": 1,
                "retained_message_token_budget": 1,
                "min_raw_tail_steps": 0,
            },
            6,
        ),
        (
            {
                "keep_recent_turn_count": 1,
                "retained_message_token_budget": 1,
                "min_raw_tail_steps": 2,
            },
            3,
        ),
        ({"keep_recent_turn_count": 2, "retained_message_token_budget": 1}, 6),
    ],
)
async def test_turn_budget_commit_on_v1(
    client: httpx.AsyncClient, tenant: TenantKeys, body: dict[str, Any], tail_start: int | None
) -> None:
    agent_session_id = await create_session(client, tenant, keep_recent_count=2)
    await append(client, tenant, agent_session_id, CONVERSATION)
    response = await commit(client, tenant, agent_session_id, retention_mode="turn_budget", **body)
    after = await state(client, tenant, agent_session_id)
    if tail_start is None:
        assert (response.status_code, response.json()["reason"]) == (
            200,
            "all_within_keep_window",
        )
        assert after["archive_count"] == 0
        # The session's own window (2) is unchanged: what lies outside it is pending.
        assert after["keep_recent_count"] == 2
        return
    assert response.status_code == 202, response.text
    archive = response.json()["archive"]
    kept = len(CONVERSATION) - tail_start + 1 if tail_start else 0
    assert (archive["start_seq"], archive["end_seq"]) == (1, (tail_start or 7) - 1)
    assert archive["tail_start_seq"] == (tail_start or None)
    assert archive["tail_message_count"] == kept
    assert response.json()["live_message_count"] == kept
    assert after["live_message_count"] == kept
    assert after["keep_recent_count"] == 2


async def test_a_tool_group_stays_whole_under_any_budget(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    for budget in range(1, 200, 7):
        agent_session_id = await create_session(client, tenant)
        await append(client, tenant, agent_session_id, CONVERSATION)
        response = await commit(
            client,
            tenant,
            agent_session_id,
            retention_mode="turn_budget",
            keep_recent_turn_count=2,
            retained_message_token_budget=budget,
        )
        if response.status_code == 200:
            continue
        tail_start = response.json()["archive"]["tail_start_seq"]
        assert tail_start in (1, 3, 4, 6), f"budget {budget} split the tool group"


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"keep_recent_turn_count": 1}, "body"),
        ({"retained_message_token_budget": 100}, "body"),
        ({"min_raw_tail_steps": 1}, "body"),
        (
            {"retention_mode": "turn_budget", "retained_message_token_budget": 0},
            "retained_message_token_budget",
        ),
        ({"retention_mode": "turns"}, "retention_mode"),
        ({"retention_mode": "turn_budget", "keep_recent_turn_count": -1}, "keep_recent_turn_count"),
        (
            {"retention_mode": "turn_budget", "retained_message_token_budget": -1},
            "retained_message_token_budget",
        ),
        ({"retention_mode": "turn_budget", "min_raw_tail_steps": -1}, "min_raw_tail_steps"),
        ({"retention_mode": "turn_budget", "min_raw_tail_steps": "2"}, "min_raw_tail_steps"),
    ],
)
async def test_bad_turn_fields_store_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys, body: dict[str, Any], loc: str
) -> None:
    agent_session_id = await create_session(client, tenant)
    await append(client, tenant, agent_session_id, CONVERSATION)
    v1 = await commit(client, tenant, agent_session_id, **body)
    assert v1.status_code == 422, v1.text
    assert v1.headers["content-type"] == "application/problem+json"
    assert loc in str(v1.json())
    assert (await state(client, tenant, agent_session_id))["archive_count"] == 0

    await ov.append(client, tenant.write, "bad-turns", ov.user("a"), ov.assistant("b"))
    response = await client.post(
        f"{ov.API}/sessions/bad-turns/commit", json=body, headers=tenant.write
    )
    error = ov.failed(response, "INVALID_ARGUMENT", 400)
    assert loc in str(error["details"])
    assert (
        ov.ok(await client.get(f"{ov.API}/sessions/bad-turns", headers=tenant.read))["commit_count"]
        == 0
    )


async def test_keep_recent_count_sent_with_the_mode_is_remembered(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant, keep_recent_count=2)
    await append(client, tenant, agent_session_id, CONVERSATION)
    response = await commit(
        client,
        tenant,
        agent_session_id,
        retention_mode="turn_budget",
        keep_recent_turn_count=1,
        keep_recent_count=0,
    )
    assert response.json()["archive"]["tail_start_seq"] == 3
    after = await state(client, tenant, agent_session_id)
    assert after["keep_recent_count"] == 0
    # Outside a window of 0, every kept message is pending.
    assert after["pending_tokens"] == response.json()["archive"]["tail_tokens"]


async def test_turn_budget_commit_on_api_v1(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await ov.append(
        client,
        tenant.write,
        "turns",
        ov.user("one"),
        ov.assistant("two"),
        ov.user("three"),
        ov.assistant("four"),
    )
    response = await client.post(
        f"{ov.API}/sessions/turns/commit",
        json={"retention_mode": "turn_budget", "keep_recent_turn_count": 1},
        headers=tenant.write,
    )
    assert ov.ok(response)["status"] == "accepted"
    info = ov.ok(await client.get(f"{ov.API}/sessions/turns", headers=tenant.read))
    assert (info["message_count"], info["commit_count"]) == (2, 1)


def drive(base_url: str, key: str) -> None:
    """Both APIs of one running server, by raw HTTP."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as http:
        created = http.post("/v1/sessions", json={})
        assert created.status_code == 201, created.text
        agent_session_id = created.json()["id"]
        appended = http.post(
            f"/v1/sessions/{agent_session_id}/messages:batch", json={"messages": CONVERSATION}
        )
        assert appended.status_code == 201, appended.text
        refused = http.post(
            f"/v1/sessions/{agent_session_id}/commit", json={"keep_recent_turn_count": 1}
        )
        assert refused.status_code == 422, refused.text
        done = http.post(
            f"/v1/sessions/{agent_session_id}/commit",
            json={
                "retention_mode": "turn_budget",
                "keep_recent_turn_count": 2,
                "retained_message_token_budget": 1,
                "wait": True,
            },
        )
        assert done.status_code == 200, done.text
        assert done.json()["archive"]["status"] == "done"
        assert (done.json()["archive"]["end_seq"], done.json()["live_message_count"]) == (5, 1)

        for message in (ov.user("one"), ov.assistant("two"), ov.user("three")):
            ov.ok(http.post(f"{ov.API}/sessions/raw-turns/messages", json=message))
        refused = http.post(f"{ov.API}/sessions/raw-turns/commit", json={"min_raw_tail_steps": 1})
        ov.failed(refused, "INVALID_ARGUMENT", 400)
        accepted = http.post(
            f"{ov.API}/sessions/raw-turns/commit",
            json={"retention_mode": "turn_budget", "keep_recent_turn_count": 1},
        )
        assert ov.ok(accepted)["status"] == "accepted"
        info = ov.ok(http.get(f"{ov.API}/sessions/raw-turns"))
        assert (info["message_count"], info["commit_count"]) == (1, 1)

        # OpenViking's own client sends the fields in its commit options (with
        # keep_recent_count=0 beside them, always).
        for message in (ov.user("one"), ov.assistant("two"), ov.user("three")):
            ov.ok(http.post(f"{ov.API}/sessions/sdk-turns/messages", json=message))
    sdk = SyncHTTPClient(url=base_url, api_key=key)
    sdk.initialize()
    try:
        committed = sdk.commit_session(
            "sdk-turns",
            options={
                "retention_mode": "turn_budget",
                "keep_recent_turn_count": 1,
                "retained_message_token_budget": 4000,
                "min_raw_tail_steps": 1,
            },
        )
        assert (committed["status"], committed["archived"]) == ("accepted", True)
        info = sdk.get_session("sdk-turns")
        assert (info["message_count"], info["commit_count"]) == (1, 1)
    finally:
        sdk.close()


@pytest.mark.e2e
async def test_turn_budget_against_workmem_serve(tmp_path: Path) -> None:
    server = Server(tmp_path / "home")
    try:
        await asyncio.to_thread(server.wait_ready)
        key = (tmp_path / "home" / "local-api-key").read_text().strip()
        await asyncio.to_thread(drive, server.base_url, key)
    finally:
        log = await asyncio.to_thread(server.stop)
    assert '"level": "error"' not in log
