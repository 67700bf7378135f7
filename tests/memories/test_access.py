"""Who sees which memories, search parameters, bad input, and erasure."""

from __future__ import annotations

import uuid

import httpx
import pytest

from app.db import Database
from tests.conftest import TenantKeys
from tests.memories.helpers import events, memories, new_session, rows, search, state, user_key

FACTS = (
    "My favorite color is teal.",
    "I work as a nurse at the city hospital.",
    "I have a dog named Biscuit.",
    "I went to a pottery class last Saturday.",
)


async def test_a_tenant_never_sees_another_tenant_s_memories_even_with_identical_text(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    for keys in (tenant, other_tenant):
        await state(client, keys, await new_session(client, keys, "same-user"), *FACTS)
    mine = await search(client, tenant.reader, "favorite color teal", min_score=-1, limit=50)
    theirs = await search(
        client, other_tenant.reader, "favorite color teal", min_score=-1, limit=50
    )
    assert len(mine) == len(theirs) == len(FACTS)
    assert not {hit["id"] for hit in mine} & {hit["id"] for hit in theirs}
    for hit in theirs:
        for path in (f"/v1/memories/{hit['id']}", f"/v1/memories/{hit['id']}/events"):
            response = await client.get(path, headers=tenant.read)
            assert response.status_code == 404, path
        deleted = await client.delete(f"/v1/memories/{hit['id']}", headers=tenant.write)
        assert deleted.status_code == 404
    assert len(await memories(client, other_tenant.reader)) == len(FACTS)


async def test_a_user_bound_key_sees_only_its_user_s_memories(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    await state(client, tenant, await new_session(client, tenant, "ana"), *FACTS)
    await state(client, tenant, await new_session(client, tenant, "ben"), *FACTS)
    ana = await user_key(database, tenant, "ana")
    found = await search(client, ana, "favorite color teal", min_score=-1, limit=50)
    assert {hit["user_id"] for hit in found} == {"ana"}
    assert len(found) == len(FACTS)
    # A query naming another user never widens the key.
    assert await search(client, ana, "favorite color teal", user_id="ben", min_score=-1) == []
    assert await memories(client, ana, user_id="ben") == []
    assert {m["user_id"] for m in await memories(client, ana)} == {"ana"}
    bens = await memories(client, tenant.reader, user_id="ben")
    assert len(bens) == len(FACTS)
    for memory in bens:
        assert (
            await client.get(
                f"/v1/memories/{memory['id']}", headers={"Authorization": f"Bearer {ana}"}
            )
        ).status_code == 404
        assert (
            await client.get(
                f"/v1/memories/{memory['id']}/events", headers={"Authorization": f"Bearer {ana}"}
            )
        ).status_code == 404
    # The tenant's unbound key filters by user on request.
    assert {h["user_id"] for h in await search(client, tenant.reader, "teal", user_id="ben")} == {
        "ben"
    }


async def test_limit_min_score_category_and_determinism(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    await state(client, tenant, await new_session(client, tenant, "cy"), *FACTS)
    everything = await search(
        client, tenant.reader, "teal nurse dog pottery", min_score=-1, limit=50
    )
    assert len(everything) == len(FACTS)
    scores = sorted(hit["score"] for hit in everything)
    middle = scores[len(scores) // 2]
    above = await search(
        client, tenant.reader, "teal nurse dog pottery", min_score=middle, limit=50
    )
    assert {hit["id"] for hit in above} == {h["id"] for h in everything if h["score"] >= middle}
    assert all(hit["score"] >= middle for hit in above)
    for limit in (1, 2, 3):
        limited = await search(
            client, tenant.reader, "teal nurse dog pottery", limit=limit, min_score=-1
        )
        assert [hit["id"] for hit in limited] == [hit["id"] for hit in everything[:limit]]
    fused = [hit["fused"] for hit in everything]
    assert fused == sorted(fused, reverse=True)
    again = await search(client, tenant.reader, "teal nurse dog pottery", min_score=-1, limit=50)
    assert again == everything
    profile = await search(client, tenant.reader, "nurse hospital", category="profile")
    assert [hit["content"] for hit in profile] == ["I work as a nurse at the city hospital."]
    assert (profile[0]["vector_rank"], profile[0]["text_rank"]) == (1, 1)
    assert await search(client, tenant.reader, "quantum chromodynamics") == []


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"q": ""}, 422),
        ({"q": "   "}, 422),
        ({"q": "nul \x00 inside"}, 422),
        ({"q": "ok", "user_id": "a\x00b"}, 422),
        ({"q": "ok", "limit": 0}, 422),
        ({"q": "ok", "limit": 51}, 422),
        ({"q": "ok", "min_score": 1.5}, 422),
        ({"q": "ok", "category": "gossip"}, 422),
        ({"q": "ok", "category": "event"}, 200),
        ({"q": "x" * 2001}, 422),
    ],
)
async def test_bad_search_input_is_refused(
    client: httpx.AsyncClient, tenant: TenantKeys, params: dict[str, str | int | float], status: int
) -> None:
    response = await client.get("/v1/memories/search", params=params, headers=tenant.read)
    assert response.status_code == status, response.text
    if status == 422:
        assert response.headers["content-type"] == "application/problem+json"


async def test_listing_pages_newest_first(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    agent_session_id = await new_session(client, tenant, "dee")
    for fact in FACTS:
        await state(client, tenant, agent_session_id, fact)
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        response = await client.get("/v1/memories", params=params, headers=tenant.read)
        seen += [m["content"] for m in response.json()["items"]]
        cursor = response.json()["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(FACTS))
    bad = await client.get("/v1/memories", params={"cursor": "%%%"}, headers=tenant.read)
    assert bad.status_code == 422


async def test_forgetting_a_memory_erases_its_vector_and_text(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    agent_session_id = await new_session(client, tenant, "eve")
    await state(client, tenant, agent_session_id, "My favorite color is teal.")
    await state(client, tenant, agent_session_id, "My favorite color is teal!")
    [memory] = await memories(client, tenant.reader)
    reader = await client.delete(f"/v1/memories/{memory['id']}", headers=tenant.read)
    assert reader.status_code == 403
    deleted = await client.delete(f"/v1/memories/{memory['id']}", headers=tenant.write)
    assert deleted.status_code == 204
    assert (
        await client.get(f"/v1/memories/{memory['id']}", headers=tenant.read)
    ).status_code == 404
    assert (
        await client.delete(f"/v1/memories/{memory['id']}", headers=tenant.write)
    ).status_code == 404
    trail = await events(client, tenant.reader, memory["id"])
    assert [e["event"] for e in trail] == ["ADD", "UPDATE", "DELETE"]
    assert all(e["old_content"] is None and e["new_content"] is None for e in trail)
    assert trail[-1]["details"] == {"reason": "memory_deleted"}
    assert trail[-1]["actor"].startswith("api_key:")
    left = await rows(
        database,
        "SELECT count(*) AS n FROM memories WHERE tenant_id = :tenant_id",
        tenant_id=tenant.tenant_id,
    )
    assert left == [{"n": 0}]
    assert await search(client, tenant.reader, "favorite color teal", min_score=-1) == []


async def test_deleting_an_agent_session_erases_the_memories_it_produced(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    gone = await new_session(client, tenant, "fay")
    kept = await new_session(client, tenant, "fay")
    await state(client, tenant, gone, "I have a dog named Biscuit.", "My favorite color is teal.")
    await state(client, tenant, kept, "I went to a pottery class last Saturday.")
    # The kept session restates a fact first stated in the deleted one: it came from there too.
    await state(client, tenant, kept, "My favorite color is teal!")
    before = {m["content"]: m["id"] for m in await memories(client, tenant.reader)}
    assert len(before) == 3

    response = await client.delete(f"/v1/sessions/{gone}", headers=tenant.write)
    assert response.status_code == 204
    after = await memories(client, tenant.reader, include_superseded="true")
    assert [m["content"] for m in after] == ["I went to a pottery class last Saturday."]
    for content in ("I have a dog named Biscuit.", "My favorite color is teal!"):
        trail = await events(client, tenant.reader, before[content])
        assert trail[-1]["event"] == "DELETE"
        assert trail[-1]["details"] == {"reason": "agent_session_deleted"}
        assert all(e["old_content"] is None and e["new_content"] is None for e in trail)
    texts = await rows(
        database,
        "SELECT count(*) AS n FROM memory_events WHERE tenant_id = :tenant_id AND"
        " (old_content LIKE '%teal%' OR new_content LIKE '%teal%' OR new_content LIKE '%Biscuit%')",
        tenant_id=tenant.tenant_id,
    )
    assert texts == [{"n": 0}]
    missing = await client.delete(f"/v1/sessions/{uuid.uuid4()}", headers=tenant.write)
    assert missing.status_code == 404
