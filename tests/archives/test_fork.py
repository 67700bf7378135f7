"""``POST /v1/sessions/{id}:fork``: validation (nothing stored), the fork point, the shared
history read through the lineage, forks of forks, and the parent kept while forks exist."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.db import Database
from tests.audit.documented import documented_queries, for_driver
from tests.conftest import TenantKeys
from tests.support.api import append, commit, create_session, user


async def _get(client: httpx.AsyncClient, keys: TenantKeys, path: str, **params: Any) -> Any:
    response = await client.get(path, params=params, headers=keys.read)
    assert response.status_code == 200, response.text
    return response.json()


async def _fork(
    client: httpx.AsyncClient, keys: TenantKeys, session: str, body: object
) -> httpx.Response:
    return await client.post(f"/v1/sessions/{session}:fork", json=body, headers=keys.write)


async def _with_archives(client: httpx.AsyncClient, keys: TenantKeys, count: int) -> str:
    """``count`` archives of two messages each: archive k holds seqs 2k-1 and 2k."""
    session = await create_session(client, keys)
    for number in range(1, count + 1):
        await append(
            client,
            keys,
            session,
            [
                user(f"Decision {number}: use tool{number}."),
                user(f"Note {number} about x{number}."),
            ],
        )
        done = await commit(client, keys, session, keep_recent_count=0, wait=True)
        assert done.json()["status"] == "done", done.text
    return session


async def _sessions(database: Database, keys: TenantKeys) -> int:
    async with database.tenant(keys.tenant_id) as db:
        return int((await db.execute(text("SELECT count(*) FROM agent_sessions"))).scalar_one())


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"at_archive": 1, "at_seq": 2},
        {"at_archive": 0},
        {"at_archive": -1},
        {"at_archive": 2**31},
        {"at_archive": "1"},
        {"at_seq": 0},
        {"at_seq": 2**63},
        {"at_seq": 1.5},
        {"at_archive": None, "at_seq": None},
        {"at_archive": 1, "name": "x"},
        [1],
    ],
)
async def test_invalid_bodies_are_422_and_store_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database, body: object
) -> None:
    session = await _with_archives(client, tenant, 1)
    before = await _sessions(database, tenant)
    response = await _fork(client, tenant, session, body)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert await _sessions(database, tenant) == before


async def test_fork_points_out_of_range(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    session = await _with_archives(client, tenant, 2)
    before = await _sessions(database, tenant)
    assert (await _fork(client, tenant, session, {"at_archive": 3})).status_code == 404
    past = await _fork(client, tenant, session, {"at_seq": 5})
    assert past.status_code == 422, past.text
    assert "after the agent session's last message (4)" in past.json()["detail"]
    await append(client, tenant, session, [user("pending")])
    assert (await commit(client, tenant, session, keep_recent_count=0)).status_code == 202
    pending = await _fork(client, tenant, session, {"at_archive": 3})
    assert pending.status_code == 409, pending.text
    assert await _sessions(database, tenant) == before
    missing = await _fork(client, tenant, "00000000-0000-0000-0000-000000000000", {"at_archive": 1})
    assert missing.status_code == 404
    reader = await client.post(
        f"/v1/sessions/{session}:fork", json={"at_archive": 1}, headers=tenant.read
    )
    assert reader.status_code == 403


async def test_a_fork_at_an_archive_shares_the_history(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    parent = await _with_archives(client, tenant, 5)
    forked = await _fork(client, tenant, parent, {"at_archive": 2})
    assert forked.status_code == 201, forked.text
    fork = forked.json()
    assert fork["lineage"] == {"parent_session_id": parent, "archive_seq": 2, "seq": 4}
    assert (fork["message_count"], fork["live_message_count"], fork["archive_count"]) == (4, 0, 2)
    assert fork["newest_archive"]["archive_seq"] == 2
    assert fork["pending_tokens"] == 0
    fork_id = fork["id"]
    parent_state = await _get(client, tenant, f"/v1/sessions/{parent}")
    assert parent_state["lineage"] is None

    messages = await _get(client, tenant, f"/v1/sessions/{fork_id}/messages")
    assert [m["seq"] for m in messages["items"]] == [1, 2, 3, 4]
    archives = await _get(client, tenant, f"/v1/sessions/{fork_id}/archives")
    assert [a["archive_seq"] for a in archives["items"]] == [2, 1]
    expanded = await _get(client, tenant, f"/v1/sessions/{fork_id}/archives/2")
    assert [m["seq"] for m in expanded["messages"]] == [3, 4]
    missing = await client.get(f"/v1/sessions/{fork_id}/archives/3", headers=tenant.read)
    assert missing.status_code == 404
    wm = await _get(client, tenant, f"/v1/sessions/{fork_id}/working-memory")
    parent_two = await _get(client, tenant, f"/v1/sessions/{parent}/working-memory/history")
    assert wm["archive_seq"] == 2
    assert wm["sections"] == {
        v["section"]: v["content"] for v in parent_two["items"] if v["archive_seq"] == 2
    }
    assert "tool2" in wm["markdown"]
    assert "tool3" not in wm["markdown"]
    history = await _get(
        client, tenant, f"/v1/sessions/{fork_id}/working-memory/history", limit=200
    )
    assert sorted({v["archive_seq"] for v in history["items"]}) == [1, 2]
    found = await _get(client, tenant, f"/v1/sessions/{fork_id}/history/search", q="tool2")
    assert [(h["seq"], h["archive_seq"]) for h in found["items"]] == [(3, 2)]
    assert (await _get(client, tenant, f"/v1/sessions/{fork_id}/history/search", q="tool3"))[
        "items"
    ] == []

    # Its own life: appends after the fork point, its own archive 3, its own version 3.
    await append(client, tenant, fork_id, [user("Decision F: use forktool.")])
    assert (await _get(client, tenant, f"/v1/sessions/{fork_id}"))["message_count"] == 5
    done = await commit(client, tenant, fork_id, keep_recent_count=0, wait=True)
    assert done.json()["status"] == "done", done.text
    assert done.json()["archive"]["archive_seq"] == 3
    assert (done.json()["archive"]["start_seq"], done.json()["archive"]["end_seq"]) == (5, 5)
    markdown = done.json()["working_memory"]["markdown"]
    assert "forktool" in markdown
    assert "tool2" in markdown
    assert "tool3" not in markdown
    parent_five = await _get(client, tenant, f"/v1/sessions/{parent}/messages", after_seq=4)
    assert parent_five["items"][0]["message"]["content"] == "Decision 3: use tool3."
    assert (await _get(client, tenant, f"/v1/sessions/{parent}/history/search", q="forktool"))[
        "items"
    ] == []
    parent_wm = await _get(client, tenant, f"/v1/sessions/{parent}/working-memory")
    assert parent_wm["archive_seq"] == 5
    assert "forktool" not in parent_wm["markdown"]


@pytest.mark.parametrize(
    ("at_seq", "archive_seq", "live"),
    [
        (4, 2, []),  # at the end of archive 2
        (5, 2, ["Decision 3: use tool3."]),  # inside archive 3: what it archived is live here
        (6, 3, []),
        (7, 3, ["live one"]),
        (8, 3, ["live one", "live two"]),
    ],
)
async def test_a_fork_at_a_message_holds_the_rest_live(
    client: httpx.AsyncClient, tenant: TenantKeys, at_seq: int, archive_seq: int, live: list[str]
) -> None:
    parent = await _with_archives(client, tenant, 3)
    await append(client, tenant, parent, [user("live one"), user("live two")])
    forked = await _fork(client, tenant, parent, {"at_seq": at_seq})
    assert forked.status_code == 201, forked.text
    fork = forked.json()
    assert fork["lineage"] == {
        "parent_session_id": parent,
        "archive_seq": archive_seq,
        "seq": at_seq,
    }
    assert (fork["message_count"], fork["live_message_count"], fork["archive_count"]) == (
        at_seq,
        len(live),
        archive_seq,
    )
    parent_messages = await _get(client, tenant, f"/v1/sessions/{parent}/messages")
    tokens = {m["seq"]: m["token_count"] for m in parent_messages["items"]}
    # The commits remembered keep_recent_count 0: every live message is pending.
    assert fork["keep_recent_count"] == 0
    assert fork["pending_tokens"] == sum(
        tokens[seq] for seq in range(at_seq - len(live) + 1, at_seq + 1)
    )
    assert fork["total_tokens"] == sum(tokens[seq] for seq in range(1, at_seq + 1))
    messages = await _get(client, tenant, f"/v1/sessions/{fork['id']}/messages")

    def without_state(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in item.items() if k != "archived"} for item in items]

    assert without_state(messages["items"]) == without_state(parent_messages["items"][:at_seq])
    assert [m["archived"] for m in messages["items"]] == [True] * (at_seq - len(live)) + [
        False
    ] * len(live)
    context = await _get(client, tenant, f"/v1/sessions/{fork['id']}/context")
    assert [m["content"] for m in context["messages"][1:]] == live
    assert context["working_memory"]["archive_seq"] == archive_seq


async def test_forks_of_forks_and_deleting_a_parent(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    root = await _with_archives(client, tenant, 2)
    child = (await _fork(client, tenant, root, {"at_archive": 2})).json()["id"]
    await append(client, tenant, child, [user("Child says: kumquat.")])
    assert (await commit(client, tenant, child, keep_recent_count=0, wait=True)).status_code == 200
    grandchild = await _fork(client, tenant, child, {"at_archive": 3})
    assert grandchild.status_code == 201, grandchild.text
    grandchild_id = grandchild.json()["id"]
    messages = await _get(client, tenant, f"/v1/sessions/{grandchild_id}/messages")
    assert [m["message"]["content"] for m in messages["items"]][-1] == "Child says: kumquat."
    assert [m["seq"] for m in messages["items"]] == [1, 2, 3, 4, 5]
    archives = await _get(client, tenant, f"/v1/sessions/{grandchild_id}/archives")
    assert [a["archive_seq"] for a in archives["items"]] == [3, 2, 1]
    # A fork at an archive the child shares with the root reads the root alone.
    early = (await _fork(client, tenant, child, {"at_archive": 1})).json()
    early_messages = await _get(client, tenant, f"/v1/sessions/{early['id']}/messages")
    assert [m["seq"] for m in early_messages["items"]] == [1, 2]
    async with database.tenant(tenant.tenant_id) as db:
        rows = (
            await db.execute(
                text(
                    "SELECT agent_session_id::text, ancestor_session_id::text, from_seq,"
                    " upto_seq, from_archive_seq, upto_archive_seq FROM wm_session_lineage"
                    " WHERE agent_session_id = :id ORDER BY upto_seq"
                ),
                {"id": grandchild_id},
            )
        ).all()
    assert [tuple(row) for row in rows] == [
        (grandchild_id, root, 1, 4, 1, 2),
        (grandchild_id, child, 5, 5, 3, 3),
    ]

    refused = await client.delete(f"/v1/sessions/{root}", headers=tenant.write)
    assert refused.status_code == 409, refused.text
    assert (await client.delete(f"/v1/sessions/{child}", headers=tenant.write)).status_code == 409
    for fork in (grandchild_id, early["id"], child, root):
        deleted = await client.delete(f"/v1/sessions/{fork}", headers=tenant.write)
        assert deleted.status_code == 204, deleted.text


async def test_restore_in_a_fork_takes_back_a_shared_version(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    parent = await _with_archives(client, tenant, 3)
    fork = (await _fork(client, tenant, parent, {"at_archive": 3})).json()["id"]
    restored = await client.post(
        f"/v1/sessions/{fork}/working-memory:restore",
        json={"archive_seq": 1},
        headers=tenant.write,
    )
    assert restored.status_code == 201, restored.text
    assert restored.json()["archive_seq"] == 4
    assert restored.json()["decisions"][0]["details"]["replaced_archive"] == 3
    assert "tool3" not in restored.json()["markdown"]
    parent_wm = await _get(client, tenant, f"/v1/sessions/{parent}/working-memory")
    assert parent_wm["archive_seq"] == 3


async def test_a_shared_message_is_redacted_where_it_is_held(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    parent = await _with_archives(client, tenant, 2)
    fork = (await _fork(client, tenant, parent, {"at_archive": 2})).json()["id"]
    through_fork = await client.post(
        f"/v1/sessions/{fork}/messages/1:redact", json={}, headers=tenant.write
    )
    assert through_fork.status_code == 409, through_fork.text
    assert parent in through_fork.json()["detail"]
    held = await client.post(
        f"/v1/sessions/{parent}/messages/1:redact", json={}, headers=tenant.write
    )
    assert held.status_code == 200, held.text
    shared = await _get(client, tenant, f"/v1/sessions/{fork}/messages")
    assert shared["items"][0]["redacted_at"] is not None
    assert shared["items"][0]["message"]["content"] == "[redacted]"


async def test_a_shared_archive_is_changed_only_where_it_is_held(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    parent = await _with_archives(client, tenant, 2)
    fork = (await _fork(client, tenant, parent, {"at_archive": 2})).json()["id"]
    for action in ("retry", "clear"):
        refused = await client.post(
            f"/v1/sessions/{fork}/archives/1:{action}", headers=tenant.write
        )
        assert refused.status_code == 409, refused.text
        assert parent in refused.json()["detail"]
    missing = await client.post(f"/v1/sessions/{fork}/archives/3:clear", headers=tenant.write)
    assert missing.status_code == 404


async def test_the_documented_forks_query(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    parent = await _with_archives(client, tenant, 3)
    at_archive = (await _fork(client, tenant, parent, {"at_archive": 2})).json()["id"]
    at_seq = (await _fork(client, tenant, parent, {"at_seq": 5})).json()["id"]
    sql = documented_queries()["forks_sharing"]
    async with database.tenant(tenant.tenant_id) as db:
        connection = await db.connection()
        result = await connection.exec_driver_sql(for_driver(sql), {"agent_session_id": parent})
        rows = [tuple(row) for row in result.all()]
    assert {row[0]: row[1:] for row in rows} == {
        uuid.UUID(at_archive): (1, 4, 1, 2),
        uuid.UUID(at_seq): (1, 4, 1, 2),
    }


async def test_a_shared_message_is_pinned_by_its_text(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    parent = await _with_archives(client, tenant, 1)
    fork = (await _fork(client, tenant, parent, {"at_seq": 2})).json()["id"]
    shared = await client.post(
        f"/v1/sessions/{fork}/pins", json={"message_seq": 1}, headers=tenant.write
    )
    assert shared.status_code == 409, shared.text
    assert parent in shared.json()["detail"]
    await append(client, tenant, fork, [user("Pin me: the fork's own rule.")])
    own = await client.post(
        f"/v1/sessions/{fork}/pins", json={"message_seq": 3}, headers=tenant.write
    )
    assert own.status_code == 201, own.text
    text = await client.post(
        f"/v1/sessions/{fork}/pins", json={"text": "Decision 1: use tool1."}, headers=tenant.write
    )
    assert text.status_code == 201, text.text
