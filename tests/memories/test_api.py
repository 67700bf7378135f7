"""Long-term memory through the HTTP API: extraction on commit, search, provenance, audit."""

from __future__ import annotations

import httpx

from app.db import Database
from tests.conftest import TenantKeys
from tests.memories.helpers import events, memories, new_session, rows, search, state
from tests.support.api import append, commit


async def test_a_commit_extracts_memories_and_reports_them(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await new_session(client, tenant, "dana")
    archive = await state(
        client,
        tenant,
        agent_session_id,
        "Hey! How are you?",
        "I moved to Lisbon last month.",
        "My favorite food is grilled sardines.",
        "Thanks!",
    )
    assert archive["memories"] == {
        "extractor": "rules",
        "added": 2,
        "updated": 0,
        "superseded": 0,
        "skipped": {"chit_chat": 1, "question": 1},
        "failed": None,
        "usage": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0},
        "prompt_version": None,
    }
    listed = await memories(client, tenant.reader)
    assert sorted((m["category"], m["content"], m["source_seqs"]) for m in listed) == [
        ("preference", "My favorite food is grilled sardines.", [5]),
        ("profile", "I moved to Lisbon last month.", [3]),
    ]
    for memory in listed:
        assert memory["user_id"] == "dana"
        assert memory["agent_session_id"] == agent_session_id
        assert memory["archive_seq"] == 1
        assert memory["embedding_model"] == "hashing:v1:384"
        assert memory["superseded_by"] is None


async def test_provenance_both_ways(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    agent_session_id = await new_session(client, tenant, "omar")
    await state(client, tenant, agent_session_id, "I have a dog named Biscuit.")
    expand = await client.get(f"/v1/sessions/{agent_session_id}/archives/1", headers=tenant.read)
    assert expand.status_code == 200, expand.text
    [produced] = expand.json()["produced_memories"]
    assert produced["event"] == "ADD"
    assert produced["source_seqs"] == [1]
    assert produced["memory"]["content"] == "I have a dog named Biscuit."
    working_memory = await client.get(
        f"/v1/sessions/{agent_session_id}/working-memory", headers=tenant.read
    )
    assert working_memory.json()["produced_memories"] == expand.json()["produced_memories"]

    [event] = await events(client, tenant.reader, produced["memory_id"])
    assert (event["event"], event["agent_session_id"], event["archive_seq"]) == (
        "ADD",
        agent_session_id,
        1,
    )
    assert event["source_seqs"] == [1]
    assert event["new_content"] == "I have a dog named Biscuit."
    assert event["actor"] == "extractor:rules"
    messages = await client.get(f"/v1/sessions/{agent_session_id}/messages", headers=tenant.read)
    by_seq = {m["seq"]: m["message"]["content"] for m in messages.json()["items"]}
    assert by_seq[event["source_seqs"][0]] == "I have a dog named Biscuit."


async def test_a_restatement_updates_and_a_change_supersedes(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await new_session(client, tenant, "lee")
    await state(client, tenant, agent_session_id, "I really love hiking in the Alps.")
    [original] = await memories(client, tenant.reader)

    again = await state(client, tenant, agent_session_id, "I really love hiking in the Alps!")
    assert (again["memories"]["added"], again["memories"]["updated"]) == (0, 1)
    [restated] = await memories(client, tenant.reader)
    assert restated["id"] == original["id"]
    assert restated["archive_seq"] == 2
    assert restated["content"] == "I really love hiking in the Alps!"
    history = await events(client, tenant.reader, original["id"])
    assert [e["event"] for e in history] == ["ADD", "UPDATE"]
    assert history[1]["old_content"] == "I really love hiking in the Alps."
    assert history[1]["details"]["reason"] == "same_slot_value"

    changed = await state(
        client, tenant, agent_session_id, "I don't like hiking in the Alps anymore."
    )
    assert changed["memories"]["superseded"] == 1
    [current] = await memories(client, tenant.reader)
    assert current["content"] == "I don't like hiking in the Alps anymore."
    everything = await memories(client, tenant.reader, include_superseded="true")
    old = next(m for m in everything if m["id"] == original["id"])
    assert old["superseded_by"] == current["id"]
    assert old["content"] == "I really love hiking in the Alps!"
    [supersede] = await events(client, tenant.reader, current["id"])
    assert supersede["event"] == "SUPERSEDE"
    assert supersede["related_memory_id"] == original["id"]
    assert supersede["old_content"] == "I really love hiking in the Alps!"
    assert [e["event"] for e in await events(client, tenant.reader, original["id"])] == [
        "ADD",
        "UPDATE",
        "SUPERSEDE",
    ]

    found = await search(client, tenant.reader, "hiking in the Alps")
    assert [hit["id"] for hit in found] == [current["id"]]
    with_old = await search(client, tenant.reader, "hiking in the Alps", include_superseded="true")
    assert {hit["id"] for hit in with_old} == {current["id"], original["id"]}


async def test_a_near_duplicate_without_a_slot_is_an_update(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await new_session(client, tenant, "ines")
    await state(client, tenant, agent_session_id, "I went to the Porto jazz festival last Friday.")
    second = await state(
        client, tenant, agent_session_id, "I went to the Porto jazz festival last Friday!!"
    )
    assert (second["memories"]["added"], second["memories"]["updated"]) == (0, 1)
    [only] = await memories(client, tenant.reader)
    [_, update] = await events(client, tenant.reader, only["id"])
    assert update["details"]["reason"] == "near_duplicate"
    assert update["details"]["nearest_similarity"] >= 0.92


async def test_nothing_to_remember_is_zero_memories_not_a_failure(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await new_session(client, tenant, None)
    archive = await state(client, tenant, agent_session_id, "Hello!", "How are you today?")
    report = archive["memories"]
    assert (report["added"], report["updated"], report["superseded"], report["failed"]) == (
        0,
        0,
        0,
        None,
    )
    assert report["skipped"] == {"chit_chat": 1, "question": 1}


async def test_memories_are_written_in_the_archive_s_own_transaction(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    """Before phase 2 there are none; after it, the memory rows, their events, the section rows
    and the archive's ``done`` all carry the same ``now()``: one transaction wrote them."""
    agent_session_id = await new_session(client, tenant, "kai")
    await append(
        client, tenant, agent_session_id, [{"role": "user", "content": "I live in Oslo now."}]
    )
    accepted = await commit(client, tenant, agent_session_id, keep_recent_count=0)
    assert accepted.status_code == 202
    assert accepted.json()["archive"]["memories"] is None
    assert await memories(client, tenant.reader) == []
    await state(client, tenant, agent_session_id, "Hi!")
    [stored] = await memories(client, tenant.reader)
    assert stored["archive_seq"] == 1
    [moments] = await rows(
        database,
        "SELECT a.finished_at, m.created_at AS memory_at, e.created_at AS event_at,"
        " (SELECT min(v.created_at) FROM wm_section_versions v WHERE v.tenant_id = a.tenant_id"
        "  AND v.agent_session_id = a.agent_session_id AND v.archive_seq = a.archive_seq)"
        "  AS sections_at"
        " FROM archives a JOIN memories m ON m.tenant_id = a.tenant_id"
        " AND m.agent_session_id = a.agent_session_id AND m.archive_seq = a.archive_seq"
        " JOIN memory_events e ON e.memory_id = m.memory_id"
        " WHERE a.tenant_id = :tenant_id AND a.archive_seq = 1",
        tenant_id=tenant.tenant_id,
    )
    assert len(set(moments.values())) == 1, moments
