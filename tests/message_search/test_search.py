"""History search: the query as the index reads it (a table), and the endpoint against the real
Postgres: archived and live messages, ranking, seq ranges, limits, errors, tenants, and the plan
that lets the GIN index serve the match (DESIGN 18)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.db import Database
from app.message_search.query import prepared
from tests.conftest import AppFactory, TenantKeys, make_tenant
from tests.support.api import append, assistant, calls, commit, create_session, user


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("refund policy", "refund policy"),
        ("app/models/user.py", '"app models user py"'),
        ("user.py,", '"user py"'),
        ("-user.py", '-"user py"'),
        ('"exact phrase" or other', '"exact phrase" or other'),
        ('"app/main.py"', '"app main py"'),
        ("sympy.core.basic  Basic", '"sympy core basic" Basic'),
        ("trailing.", "trailing "),
        ("-", "-"),
    ],
)
def test_prepared(query: str, expected: str) -> None:
    assert prepared(query) == expected.strip()


async def search(
    client: httpx.AsyncClient, keys: TenantKeys, sid: str, **params: Any
) -> httpx.Response:
    return await client.get(f"/v1/sessions/{sid}/history/search", params=params, headers=keys.read)


async def seeded(client: httpx.AsyncClient, keys: TenantKeys) -> str:
    """Messages 1-6 archived (archive 1), 7-10 archived (archive 2), 11-12 live."""
    sid = await create_session(client, keys)
    await append(
        client,
        keys,
        sid,
        [
            user("The refund for booking ZX9Q1 was approved by finance."),
            assistant("Noted: refund approved."),
            user("Please fix the crash in app/models/user.py"),
            calls("c1"),
            {"role": "tool", "tool_call_id": "c1", "content": "Traceback: KeyError 'email'"},
            assistant("The KeyError comes from a missing email column."),
        ],
    )
    assert (await commit(client, keys, sid, keep_recent_count=0, wait=True)).status_code == 200
    await append(
        client,
        keys,
        sid,
        [
            user("What about the refund deadline?"),
            assistant("Refunds close after 30 days; refund refund refund."),
            user("And the user.py tests?"),
            assistant("They pass now."),
        ],
    )
    assert (await commit(client, keys, sid, keep_recent_count=0, wait=True)).status_code == 200
    await append(client, keys, sid, [user("One more refund question"), assistant("Sure.")])
    return sid


async def test_search_finds_archived_and_live_messages_ranked_with_seq_archive_and_snippet(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await seeded(client, tenant)
    response = await search(client, tenant, sid, q="refund")
    assert response.status_code == 200, response.text
    body = response.json()
    hits = body["items"]
    assert {hit["seq"] for hit in hits} == {1, 2, 7, 8, 11}
    assert hits[0]["seq"] == 8  # four mentions: the highest rank
    ranks = [hit["rank"] for hit in hits]
    assert ranks == sorted(ranks, reverse=True)
    by_seq = {hit["seq"]: hit for hit in hits}
    assert by_seq[1]["archive_seq"] == 1
    assert by_seq[7]["archive_seq"] == 2
    assert by_seq[11]["archive_seq"] is None
    assert by_seq[1]["role"] == "user"
    assert "ZX9Q1" in by_seq[1]["snippet"]
    assert (body["from_seq"], body["to_seq"]) == (1, 12)


async def test_paths_tool_results_and_phrases_are_found_as_written(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await seeded(client, tenant)
    path = (await search(client, tenant, sid, q="app/models/user.py")).json()["items"]
    assert [hit["seq"] for hit in path] == [3]
    assert "app/models/user.py" in path[0]["snippet"]
    dotted = (await search(client, tenant, sid, q="user.py")).json()["items"]
    assert {hit["seq"] for hit in dotted} == {3, 9}
    tool = (await search(client, tenant, sid, q="KeyError email")).json()["items"]
    assert {hit["seq"] for hit in tool} == {5, 6}
    assert {hit["role"] for hit in tool} == {"tool", "assistant"}
    phrase = (await search(client, tenant, sid, q='"refund deadline"')).json()["items"]
    assert [hit["seq"] for hit in phrase] == [7]
    negated = (await search(client, tenant, sid, q="refund -approved")).json()["items"]
    assert 1 not in {hit["seq"] for hit in negated}
    assert (await search(client, tenant, sid, q="zeppelin")).json()["items"] == []


@pytest.mark.parametrize(
    ("params", "seqs"),
    [
        ({"from_seq": 7}, {7, 8, 11}),
        ({"to_seq": 6}, {1, 2}),
        ({"from_seq": 2, "to_seq": 7}, {2, 7}),
        ({"from_seq": 8, "to_seq": 8}, {8}),
        ({"limit": 2}, {8, 7}),
        ({"limit": 1}, {8}),
    ],
)
async def test_seq_ranges_and_limits(
    client: httpx.AsyncClient, tenant: TenantKeys, params: dict[str, int], seqs: set[int]
) -> None:
    sid = await seeded(client, tenant)
    hits = (await search(client, tenant, sid, q="refund", **params)).json()["items"]
    if "limit" in params:
        assert len(hits) == params["limit"]
        assert hits[0]["seq"] == 8
    else:
        assert {hit["seq"] for hit in hits} == seqs


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"q": ""}, "q"),
        ({}, "q"),
        ({"q": "!!! ..."}, "q"),
        ({"q": "a\x00b"}, "q"),
        ({"q": "x" * 501}, "q"),
        ({"q": "refund", "limit": 0}, "limit"),
        ({"q": "refund", "limit": 51}, "limit"),
        ({"q": "refund", "from_seq": 0}, "from_seq"),
        ({"q": "refund", "from_seq": 5, "to_seq": 4}, "from_seq"),
        # Beyond what Postgres's bigint holds: refused, never sent to the database.
        ({"q": "refund", "to_seq": 2**63}, "to_seq"),
        ({"q": "refund", "from_seq": 30080567479391764873216}, "from_seq"),
    ],
)
async def test_bad_searches_are_a_clear_422(
    client: httpx.AsyncClient, tenant: TenantKeys, params: dict[str, Any], field: str
) -> None:
    sid = await create_session(client, tenant)
    await append(client, tenant, sid, [user("hello")])
    response = await search(client, tenant, sid, **params)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["errors"][0]["loc"][-1] == field


async def test_another_tenants_agent_session_is_not_found_and_never_searched(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    sid = await seeded(client, tenant)
    assert (await search(client, other_tenant, sid, q="refund")).status_code == 404
    assert (await search(client, tenant, str(uuid.uuid4()), q="refund")).status_code == 404
    theirs = await create_session(client, other_tenant)
    await append(client, other_tenant, theirs, [user("refund refund")])
    hits = (await search(client, tenant, sid, q="refund")).json()["items"]
    assert {hit["seq"] for hit in hits} == {1, 2, 7, 8, 11}


async def test_the_function_returns_nothing_outside_the_transactions_tenant(
    database: Database, client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    sid = await seeded(client, tenant)
    call = text("SELECT count(*) FROM workmem_history_search(:sid, 'refund', 1, 100, 10)")
    async with database.tenant(other_tenant.tenant_id) as db:
        assert await db.scalar(call, {"sid": sid}) == 0
    async with database.unscoped() as db:
        assert await db.scalar(call, {"sid": sid}) == 0
    async with database.tenant(tenant.tenant_id) as db:
        assert await db.scalar(call, {"sid": sid}) == 5


INNER = """
EXPLAIN (COSTS OFF)
SELECT m.seq FROM messages m
WHERE m.tenant_id = :tenant AND m.agent_session_id = :sid AND m.seq BETWEEN 1 AND 1000000
  AND m.content_words @@ websearch_to_tsquery('english'::regconfig, 'zeppelin')
"""


async def test_the_gin_index_serves_the_match_as_the_definer_and_cannot_under_rls(
    own_database: Database, own_admin_database: Database, app_client: AppFactory
) -> None:
    """Why the search runs in a SECURITY DEFINER function: in a long agent session (its own
    database, so the statistics are this session's), a rare word is found through the GIN index
    by workmem_definer; under the tenant policy the non-leakproof ``@@`` is evaluated row by
    row, and the index is never used."""
    keys = await make_tenant(own_database)
    async with app_client(own_database) as http:
        sid = await create_session(http, keys)
        for batch in range(8):
            await append(
                http,
                keys,
                sid,
                [user(f"ordinary message {batch}-{n} about flights and fares") for n in range(500)],
            )
        await append(http, keys, sid, [user("the zeppelin leaves at noon")])
        hits = (await search(http, keys, sid, q="zeppelin")).json()["items"]
    assert [hit["seq"] for hit in hits] == [4_001]
    async with own_admin_database.unscoped() as db:
        await db.execute(text("ANALYZE messages"))
    params = {"tenant": keys.tenant_id, "sid": sid}
    plans: dict[str, str] = {}
    for role in ("workmem_definer", "workmem_app"):
        async with own_admin_database.tenant(keys.tenant_id) as db:
            await db.execute(text(f"SET LOCAL ROLE {role}"))
            rows = (await db.execute(text(INNER), params)).scalars().all()
            plans[role] = "\n".join(rows)
    assert "Bitmap Index Scan on ix_messages_content_words" in plans["workmem_definer"], plans
    assert "ix_messages_content_words" not in plans["workmem_app"], plans


SHAPES = {
    "one rare word": "zeppelin",
    "many words": " ".join(["zeppelin", "leaves", "noon"] * 8),
    "a phrase": '"zeppelin leaves"',
    "a word and an exclusion": "zeppelin -fares",
}
SHAPED = """
EXPLAIN (COSTS OFF)
SELECT m.seq FROM messages m
WHERE m.tenant_id = :tenant AND m.agent_session_id = :sid AND m.seq BETWEEN 1 AND 1000000
  AND m.content_words @@ websearch_to_tsquery('english'::regconfig, :query)
ORDER BY m.seq DESC LIMIT 100
"""


async def test_every_query_shape_with_a_rare_word_is_matched_through_the_gin_index(
    own_database: Database, own_admin_database: Database, app_client: AppFactory
) -> None:
    """Many words, a phrase, an exclusion: when one word is rare, the inner query of the search
    function finds its matches through the GIN index over the stored words (words every message
    has are read newest first instead, and stop after 100 matches)."""
    keys = await make_tenant(own_database)
    async with app_client(own_database) as http:
        sid = await create_session(http, keys)
        for batch in range(8):
            await append(
                http,
                keys,
                sid,
                [user(f"ordinary message {batch}-{n} about flights and fares") for n in range(500)],
            )
        await append(http, keys, sid, [user("the zeppelin leaves at noon")])
        for query in SHAPES.values():
            found = await search(http, keys, sid, q=query)
            assert [hit["seq"] for hit in found.json()["items"]] == [4_001], query
    async with own_admin_database.unscoped() as db:
        await db.execute(text("ANALYZE messages"))
    for shape, query in SHAPES.items():
        async with own_admin_database.tenant(keys.tenant_id) as db:
            await db.execute(text("SET LOCAL ROLE workmem_definer"))
            params = {"tenant": keys.tenant_id, "sid": sid, "query": prepared(query)}
            plan = "\n".join((await db.execute(text(SHAPED), params)).scalars().all())
        assert "Bitmap Index Scan on ix_messages_content_words" in plan, (shape, plan)
        # The recheck (a phrase's word order) reads the stored words, rebuilding nothing.
        assert "to_tsvector" not in plan, (shape, plan)
    async with own_admin_database.unscoped() as db:
        options = await db.scalar(
            text("SELECT reloptions FROM pg_class WHERE relname = 'ix_messages_content_words'")
        )
    # No pending list: a search right after heavy appends reads only merged entries.
    assert options == ["fastupdate=off"]


async def test_a_query_of_exclusions_only_finds_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    """ "-refund" has no word to look for: answering it would test every message of the agent
    session; it finds nothing (it used to return every message without the word)."""
    sid = await seeded(client, tenant)
    found = await search(client, tenant, sid, q="-refund")
    assert found.status_code == 200
    assert found.json()["items"] == []
    assert len((await search(client, tenant, sid, q="refund")).json()["items"]) == 5
