"""The context and compact endpoints over HTTP: shape, roles, tenancy, validation, edge cases, and
the number of rows a context reads not depending on the length of the history."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import event, text

from app.context.assembly import CUT_NOTE
from app.context.summary import REDUCTION_ORDER
from app.db import Database
from app.wm.tokens import count_tokens
from tests.conftest import AppFactory, TenantKeys, make_tenant
from tests.context.helpers import (
    SUMMARY_PREFIX,
    assert_well_formed,
    get_context,
    stored_messages,
)
from tests.support.api import append, assistant, calls, commit, create_session, result, user
from tests.support.archives import RecordingGenerator


@contextmanager
def recorded_statements(database: Database) -> Iterator[list[tuple[str, int]]]:
    """Each SQL statement the engine runs meanwhile, with the rows it returned."""
    found: list[tuple[str, int]] = []

    def record(_connection: object, cursor: Any, statement: str, *_: object) -> None:
        found.append((statement, cursor.rowcount))

    event.listen(database.engine.sync_engine, "after_cursor_execute", record)
    try:
        yield found
    finally:
        event.remove(database.engine.sync_engine, "after_cursor_execute", record)


async def session_total_tokens(client: httpx.AsyncClient, keys: TenantKeys, sid: str) -> int:
    response = await client.get(f"/v1/sessions/{sid}", headers=keys.read)
    total: int = response.json()["total_tokens"]
    return total


async def test_an_empty_session(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    sid = await create_session(client, tenant)
    context = await get_context(client, tenant, sid)
    assert context["messages"] == []
    assert context["system_prompt_addition"] == ""
    assert context["working_memory"] is None
    assert context["preserved_tail"] is None
    assert context["archive_index"] == []
    assert context["tokens"]["total"] == 0
    assert context["tokens"]["budget"] == 128_000
    assert context["tokens"]["reserved"] == 20_000
    assert context["tokens"]["wm_layer"] == 8_000
    assert context["stats"]["newest_user_seq"] is None


async def test_live_messages_are_sent_as_stored(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    sent = [user("Deploy the billing service"), calls("c1"), result("c1"), assistant("Deployed.")]
    await append(client, tenant, sid, sent)
    context = await get_context(client, tenant, sid)
    assert_well_formed(context)
    assert context["messages"] == sent
    stored = await stored_messages(client, tenant, sid)
    assert context["tokens"]["messages"] == sum(m["token_count"] for m in stored)
    assert context["tokens"]["history_total"] == await session_total_tokens(client, tenant, sid)
    assert context["stats"]["newest_user_seq"] == 1
    assert context["stats"]["messages_unsummarised"] == 4


async def test_after_a_commit_the_summary_opens_the_messages(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    await append(
        client,
        tenant,
        sid,
        [
            user("We are migrating billing to Postgres. Never deploy on Fridays."),
            assistant("Understood, starting with the schema."),
            user("The schema lives in db/schema.sql"),
            assistant("Read it."),
            user("Now copy the data"),
            assistant("Copying."),
        ],
    )
    done = await commit(client, tenant, sid, keep_recent_count=2, wait=True)
    assert done.json()["status"] == "done"
    await append(client, tenant, sid, [user("How far is the copy?")])

    context = await get_context(client, tenant, sid)
    assert_well_formed(context)
    summary, *raw = context["messages"]
    assert summary["role"] == "user"
    assert summary["content"].startswith(SUMMARY_PREFIX)
    assert "db/schema.sql" in summary["content"]
    assert [m["content"] for m in raw] == ["Now copy the data", "Copying.", "How far is the copy?"]
    memory = context["working_memory"]
    assert (memory["archive_seq"], memory["covered_start_seq"], memory["covered_end_seq"]) == (
        1,
        1,
        4,
    )
    assert memory["sections"]["Files & Context"]
    assert context["preserved_tail"] == {
        "archive_seq": 1,
        "start_seq": 5,
        "end_seq": 6,
        "message_count": 2,
        "tokens": done.json()["archive"]["tail_tokens"],
        "keep_recent_count": 2,
        "in_context": 2,
    }
    [entry] = context["archive_index"]
    assert (entry["archive_seq"], entry["status"], entry["in_context"]) == (1, "done", "summary")
    assert entry["abstract"]
    hint = context["system_prompt_addition"]
    assert "lossy summary of messages 1-4 (the working memory after archive 1)" in hint
    assert f"GET /v1/sessions/{sid}/archives/{{archive_seq}}" in hint
    assert "archives (1 = messages 1-4)" in hint
    assert context["tokens"]["system_prompt_addition"] > 0
    assert context["tokens"]["history_total"] == await session_total_tokens(client, tenant, sid)
    assert context["stats"]["newest_user_seq"] == 7


async def test_roles_and_tenancy(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    await append(client, tenant, sid, [user("hello")])
    path = f"/v1/sessions/{sid}"
    assert (await client.get(f"{path}/context", headers=tenant.read)).status_code == 200
    assert (await client.get(f"{path}/context")).status_code == 401
    denied = await client.post(f"{path}/compact", headers=tenant.read)
    assert denied.status_code == 403
    foreign = await client.get(f"{path}/context", headers=other_tenant.read)
    assert foreign.status_code == 404
    assert foreign.headers["content-type"] == "application/problem+json"
    assert (await client.post(f"{path}/compact", headers=other_tenant.write)).status_code == 404
    unknown = await client.get(f"/v1/sessions/{uuid.uuid4()}/context", headers=tenant.read)
    assert unknown.status_code == 404
    # Nothing was committed by the refused compacts.
    assert (await client.get(path, headers=tenant.read)).json()["archive_count"] == 0


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"token_budget": 0}, "token_budget"),
        ({"token_budget": -1}, "token_budget"),
        ({"token_budget": "many"}, "token_budget"),
        ({"token_budget": 10_000_001}, "token_budget"),
        ({"reserve_tokens": -1}, "reserve_tokens"),
        ({"token_budget": 1_000, "reserve_tokens": 1_000}, "reserve_tokens"),
        ({"token_budget": 1_000, "reserve_tokens": 5_000}, "reserve_tokens"),
        ({"reserve_tokens": 128_000}, "reserve_tokens"),
    ],
)
async def test_invalid_budgets_are_422(
    client: httpx.AsyncClient, tenant: TenantKeys, params: dict[str, Any], field: str
) -> None:
    sid = await create_session(client, tenant)
    for response in (
        await client.get(f"/v1/sessions/{sid}/context", params=params, headers=tenant.read),
        await client.post(f"/v1/sessions/{sid}/compact", params=params, headers=tenant.write),
    ):
        assert response.status_code == 422, response.text
        body = response.json()
        assert body["type"] == "validation_error"
        assert ["query", field] in [error["loc"] for error in body["errors"]]
    assert (await client.get(f"/v1/sessions/{sid}", headers=tenant.read)).json()[
        "archive_count"
    ] == 0


async def test_reserve_zero_and_explicit_reserve(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    await append(client, tenant, sid, [user("hi")])
    none = await get_context(client, tenant, sid, token_budget=5_000, reserve_tokens=0)
    assert (none["tokens"]["reserved"], none["tokens"]["usable"]) == (0, 5_000)
    # No hint without an archive; the unsummarised message takes its room before the summary.
    assert none["tokens"]["wm_layer"] == 5_000 - none["tokens"]["messages"]
    some = await get_context(client, tenant, sid, token_budget=5_000, reserve_tokens=4_999)
    assert some["tokens"]["usable"] == 1


async def test_compact_commits_everything_and_returns_the_context(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    nothing = await client.post(f"/v1/sessions/{sid}/compact", headers=tenant.write)
    assert nothing.status_code == 200
    assert nothing.json()["commit"] == {
        "status": "skipped",
        "reason": "no_messages",
        "archive_seq": None,
    }
    await append(
        client,
        tenant,
        sid,
        [user("Look up order 77"), calls("c1"), result("c1"), assistant("Order 77 shipped.")],
    )
    response = await client.post(
        f"/v1/sessions/{sid}/compact", params={"token_budget": 50_000}, headers=tenant.write
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["commit"] == {"status": "done", "reason": None, "archive_seq": 1}
    assert_well_formed(body)
    assert len(body["messages"]) == 1
    assert body["messages"][0]["content"].startswith(SUMMARY_PREFIX)
    assert body["tokens"]["budget"] == 50_000
    assert body["working_memory"]["covered_end_seq"] == 4
    assert body["stats"]["messages_unsummarised"] == 0
    assert body["preserved_tail"] is None
    state = (await client.get(f"/v1/sessions/{sid}", headers=tenant.read)).json()
    assert (state["keep_recent_count"], state["live_message_count"]) == (0, 0)

    # A call still waiting for its result stays live (the split never archives it) and is not
    # sent until its result arrives: a list with an unanswered call would be rejected.
    await append(client, tenant, sid, [user("And order 78?"), calls("c2")])
    waiting = (await client.post(f"/v1/sessions/{sid}/compact", headers=tenant.write)).json()
    assert waiting["commit"]["status"] == "done"
    assert_well_formed(waiting)
    assert waiting["working_memory"]["covered_end_seq"] == 5
    assert "And order 78?" in waiting["messages"][0]["content"]
    assert len(waiting["messages"]) == 1
    assert waiting["stats"]["dropped"] == [{"seq": 6, "reason": "awaiting_tool_results"}]
    await append(client, tenant, sid, [result("c2")])
    answered = await get_context(client, tenant, sid)
    assert_well_formed(answered)
    assert answered["messages"][-2:] == [calls("c2"), result("c2")]
    assert answered["stats"]["dropped"] == []


async def test_a_newest_user_message_larger_than_the_budget_is_sent_alone(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    await append(client, tenant, sid, [user("Remember: the vault code is 1234"), assistant("OK")])
    await commit(client, tenant, sid, keep_recent_count=0, wait=True)
    huge = user("please read this log: " + "error at line 7; " * 400)
    await append(client, tenant, sid, [assistant("anything else?"), huge])
    context = await get_context(client, tenant, sid, token_budget=1_000)
    assert_well_formed(context)
    assert context["messages"] == [huge]
    assert context["tokens"]["over_budget"] is True
    assert context["tokens"]["total"] == context["tokens"]["messages"] > 500
    assert context["stats"]["summary_omitted"] is True
    assert context["stats"]["hint_omitted"] is True
    assert context["stats"]["omitted_ranges"] == [{"start_seq": 3, "end_seq": 3}]
    roomy = await get_context(client, tenant, sid, token_budget=128_000)
    assert roomy["tokens"]["over_budget"] is False
    assert roomy["messages"][0]["content"].startswith(SUMMARY_PREFIX)


async def test_messages_a_server_would_reject_are_reported_not_sent(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    stray = {"role": "tool", "tool_call_id": "nobody", "content": "stray result"}
    named = {**result("c1"), "name": "lookup"}
    await append(client, tenant, sid, [user("go"), stray, calls("c1"), named, assistant("done")])
    context = await get_context(client, tenant, sid)
    assert_well_formed(context)
    assert context["messages"] == [user("go"), calls("c1"), result("c1"), assistant("done")]
    assert context["stats"]["dropped"] == [{"seq": 2, "reason": "orphan_tool_result"}]
    assert context["stats"]["sanitised_messages"] == 1


async def test_small_budgets_cut_the_summary_in_order_and_say_so(
    client: httpx.AsyncClient, admin_database: Database, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    await append(client, tenant, sid, [user("Refactor the handlers"), assistant("ok")])
    await commit(client, tenant, sid, keep_recent_count=0, wait=True)
    files = "\n".join(f"- src/module_{n}/handler_{n}.py" for n in range(30))
    facts = "\n".join(f"- decision {n}: keep handler {n} synchronous" for n in range(40))
    async with admin_database.unscoped() as db:
        for section, body in (("Files & Context", files), ("Key Facts & Decisions", facts)):
            await db.execute(
                text(
                    "UPDATE wm_section_versions SET content = :body, token_count = :tokens"
                    " WHERE agent_session_id = :sid AND section = :section"
                ),
                {"body": body, "tokens": count_tokens(body), "sid": sid, "section": section},
            )
    await append(client, tenant, sid, [user("status?")])
    full = await get_context(client, tenant, sid)
    assert full["stats"]["wm_cuts"] == []
    assert "src/module_29/handler_29.py" in full["messages"][0]["content"]
    whole = full["tokens"]["wm"]

    # A layer one token short of the whole summary (what the hint and the unsummarised message
    # leave of the budget): only the first reduction step is taken.
    one_short = whole - 1 + full["tokens"]["system_prompt_addition"] + full["tokens"]["messages"]
    first = await get_context(client, tenant, sid, token_budget=one_short, reserve_tokens=0)
    assert_well_formed(first)
    assert first["tokens"]["wm_layer"] == whole - 1
    assert first["stats"]["wm_cuts"] == [
        {"kind": "items", "section": "Files & Context", "removed": 10}
    ]
    summary = first["messages"][0]["content"]
    assert "src/module_19/handler_19.py" in summary
    assert "src/module_20/handler_20.py" not in summary
    assert "- [cut: 10 more items, to fit the token budget]" in summary
    assert first["system_prompt_addition"].endswith(CUT_NOTE)
    assert CUT_NOTE not in full["system_prompt_addition"]

    tight = await get_context(client, tenant, sid, token_budget=1_200)
    assert_well_formed(tight)
    assert tight["tokens"]["wm"] <= tight["tokens"]["wm_layer"]
    cuts = [(cut["kind"], cut["section"]) for cut in tight["stats"]["wm_cuts"]]
    assert cuts[:3] == [
        ("items", "Files & Context"),
        ("items", "Key Facts & Decisions"),
        # The title is shorter than a cut marker, so cutting it would save nothing.
        ("section", "Files & Context"),
    ]
    # The cuts are taken in the reduction order (a step may repeat a kind and section with a
    # smaller keep, as Key Facts' halvings do).
    order = iter((step.kind.value, step.section.value) for step in REDUCTION_ORDER)
    assert all(cut in order for cut in cuts)
    assert tight["messages"][-1] == user("status?")


async def test_rows_read_do_not_depend_on_history_length(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    async def build(history: int) -> str:
        sid = await create_session(client, tenant)
        for start in range(0, history, 500):
            batch = [user(f"history message {n}") for n in range(start, min(history, start + 500))]
            await append(client, tenant, sid, batch)
            await commit(client, tenant, sid, keep_recent_count=0, wait=True)
        await append(client, tenant, sid, [user(f"tail {n}") for n in range(30)])
        return sid

    short, long = await build(100), await build(3_000)
    seen: dict[str, list[tuple[str, int]]] = {}
    for sid in (short, long):
        await get_context(client, tenant, sid)  # the key is verified once, then cached
        with recorded_statements(database) as statements:
            context = await get_context(client, tenant, sid)
        assert_well_formed(context)
        assert [m["content"] for m in context["messages"][1:]] == [f"tail {n}" for n in range(30)]
        seen[sid] = statements
    assert len(seen[short]) == len(seen[long]), "the number of statements grew with history"
    message_rows = {
        sid: sum(rows for sql, rows in found if "FROM messages" in sql)
        for sid, found in seen.items()
    }
    assert message_rows[short] == message_rows[long] == 30
    assert all(rows <= 20 for sql, rows in seen[long] if "FROM archives" in sql)


async def test_a_compact_that_times_out_sends_the_archive_raw(
    own_database: Database, app_client: AppFactory
) -> None:
    keys = await make_tenant(own_database)
    async with app_client(own_database, generator=RecordingGenerator(delay_s=1.0)) as http:
        sid = await create_session(http, keys)
        await append(http, keys, sid, [user("first"), assistant("second")])
        response = await http.post(
            f"/v1/sessions/{sid}/compact", params={"wait_timeout_s": 0.2}, headers=keys.write
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["commit"] == {"status": "running", "reason": None, "archive_seq": 1}
        assert_well_formed(body)
        assert body["messages"] == [user("first"), assistant("second")]
        assert body["archive_index"][0]["status"] == "running"
        assert body["archive_index"][0]["in_context"] == "raw"
        assert body["system_prompt_addition"].startswith("Messages 1-2 of this conversation")
