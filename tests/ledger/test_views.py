"""The ledger's audit views and the two ledger queries of docs/audit.md, read from the guide and
run on agent sessions built by real commits: which section versions (with their decisions) a
recorded context's summary was made of, and which recorded contexts put a message in front of the
model, raw or through an item that cites it."""

from __future__ import annotations

from typing import Any

import httpx

from app.db import Database
from tests.audit.documented import documented_queries, for_driver
from tests.conftest import TenantKeys
from tests.context.helpers import get_context
from tests.support.api import append, assistant, commit, create_session, user


async def run(
    database: Database, keys: TenantKeys, name: str, **params: object
) -> list[dict[str, Any]]:
    sql = documented_queries()[name]
    async with database.tenant(keys.tenant_id) as db:
        connection = await db.connection()
        result = await connection.exec_driver_sql(for_driver(sql), params)
        return [dict(row._mapping) for row in result.all()]


async def scenario(client: httpx.AsyncClient, keys: TenantKeys) -> tuple[str, str, str]:
    """An agent session whose first context is recorded on archive 1's working memory, and a
    second, filled, after archive 2: the rota question (message 3) is cited by both summaries
    and sent raw by the second's fill."""
    sid = await create_session(client, keys)
    await append(
        client,
        keys,
        sid,
        [
            user("Migrate billing to Stripe. Never deploy on Fridays."),
            assistant("Plan: migrate billing in three steps."),
            user("Who owns the on-call rota?"),
            assistant("Unknown yet; I will ask."),
        ],
    )
    assert (await commit(client, keys, sid, keep_recent_count=0, wait=True)).status_code == 200
    await append(client, keys, sid, [user("Start with the invoices table.")])
    first = (await get_context(client, keys, sid, record="true"))["context_id"]
    await append(client, keys, sid, [assistant("Invoices migrated."), user("Next: refunds.")])
    assert (await commit(client, keys, sid, keep_recent_count=1, wait=True)).status_code == 200
    second = (await get_context(client, keys, sid, record="true", fill="true", token_budget=4000))[
        "context_id"
    ]
    return sid, first, second


async def test_the_section_versions_a_context_used(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    sid, first, second = await scenario(client, tenant)
    rows = await run(database, tenant, "context_sections", context_id=first)
    assert [row["position"] for row in rows] == list(range(1, 8))
    assert {row["archive_seq"] for row in rows} == {1}
    assert all(row["unchanged"] for row in rows)
    assert {row["generator"] for row in rows} == {"offline"}
    later = await run(database, tenant, "context_sections", context_id=second)
    assert {row["archive_seq"] for row in later} == {2}
    # A redaction of a cited message changes the versions that quoted it: the view says so.
    redacted = await client.post(
        f"/v1/sessions/{sid}/messages/1:redact", json={"reason": "test"}, headers=tenant.write
    )
    assert redacted.status_code == 200, redacted.text
    after = await run(database, tenant, "context_sections", context_id=first)
    assert not all(row["unchanged"] for row in after)


async def test_the_contexts_that_put_a_message_in_front_of_the_model(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    sid, first, second = await scenario(client, tenant)
    cited = await run(database, tenant, "contexts_using_message", agent_session_id=sid, seq="3")
    how = {(str(row["context_id"]), row["how"]) for row in cited}
    assert {context_id for context_id, _ in how} == {first, second}
    # The first saw it only through the summary; the second, filled, raw as well.
    assert all(h.startswith("summary: ") for c, h in how if c == first)
    assert (second, "raw filled") in how
    assert any(c == second and h.startswith("summary: ") for c, h in how)
    raw = await run(database, tenant, "contexts_using_message", agent_session_id=sid, seq="5")
    hows = {(str(row["context_id"]), row["how"]) for row in raw}
    assert (first, "raw tail") in hows
    assert any(context_id == second for context_id, _ in hows)
    # Another tenant's ids show nothing (the views read under row-level security).
    other = await run(database, tenant, "contexts_using_message", agent_session_id=sid, seq="99")
    assert other == []


async def test_a_forks_recorded_context_renders_and_joins_the_history_it_shares(
    client: httpx.AsyncClient, tenant: TenantKeys, database: Database
) -> None:
    sid, _, _ = await scenario(client, tenant)
    forked = await client.post(
        f"/v1/sessions/{sid}:fork", json={"at_archive": 2}, headers=tenant.write
    )
    assert forked.status_code == 201, forked.text
    fork = forked.json()["id"]
    await append(client, tenant, fork, [user("On the fork: try Adyen instead.")])
    context = await get_context(client, tenant, fork, record="true", fill="true", token_budget=4000)
    assert context["working_memory"]["archive_seq"] == 2
    # The parent and the fork go on: neither changes what the fork's context was made of.
    await append(client, tenant, sid, [user("On the parent: keep Stripe.")])
    assert (await commit(client, tenant, sid, keep_recent_count=0, wait=True)).status_code == 200
    await append(client, tenant, fork, [assistant("Adyen it is.")])
    body = (
        await client.get(
            f"/v1/sessions/{fork}/contexts/{context['context_id']}",
            params={"render": "true"},
            headers=tenant.read,
        )
    ).json()
    assert body["render"]["matches"] is True, body["render"]["unavailable"]
    assert body["render"]["messages"] == context["messages"]
    rows = await run(database, tenant, "context_sections", context_id=context["context_id"])
    assert len(rows) == 7
    assert all(row["unchanged"] and row["op_applied"] is not None for row in rows)
