"""The context ledger through the API: a context asked to record leaves one row naming what it
was made of (ids, seqs, options, token counts, hashes; never a text), listed newest first with a
cursor and read one by one; other agent sessions' and tenants' rows answer as missing."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
from sqlalchemy import text

from app.db import Database
from app.ledger.records import expand_ranges, messages_sha256
from tests.conftest import TenantKeys
from tests.context.helpers import get_context
from tests.support.api import append, assistant, calls, commit, create_session, result, user


async def recorded(
    client: httpx.AsyncClient, keys: TenantKeys, sid: str, context_id: str, **params: Any
) -> dict[str, Any]:
    response = await client.get(
        f"/v1/sessions/{sid}/contexts/{context_id}", params=params, headers=keys.read
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def a_session_with_history(client: httpx.AsyncClient, keys: TenantKeys) -> str:
    sid = await create_session(client, keys)
    await append(
        client,
        keys,
        sid,
        [
            user("We deploy the billing service with blue-green switches."),
            assistant("Noted: blue-green for billing."),
            user("Look up the invoice INV-7731 please."),
            calls("call_1"),
            {**result("call_1"), "content": "invoice line " * 200},
            assistant("INV-7731 is paid."),
        ],
    )
    assert (await commit(client, keys, sid, keep_recent_count=2, wait=True)).status_code == 200
    await append(client, keys, sid, [user("Which port does billing listen on?"), assistant("8443")])
    await append(client, keys, sid, [user("And the staging port?")])
    return sid


async def test_a_recorded_context_names_its_parts_and_hashes_its_messages(
    client: httpx.AsyncClient, tenant: TenantKeys, admin_database: Database
) -> None:
    sid = await a_session_with_history(client, tenant)
    pinned = await client.post(
        f"/v1/sessions/{sid}/pins", json={"text": "Never deploy on Fridays"}, headers=tenant.write
    )
    assert pinned.status_code == 201, pinned.text
    plain = await get_context(client, tenant, sid)
    assert plain["context_id"] is None
    context = await get_context(
        client, tenant, sid, record="true", fill="true", token_budget=4000, clear_tool_results=0
    )
    context_id = context["context_id"]
    assert context_id is not None
    # Recording changes nothing of the answer.
    assert (
        context["messages"]
        == (
            await get_context(
                client, tenant, sid, fill="true", token_budget=4000, clear_tool_results=0
            )
        )["messages"]
    )

    row = await recorded(client, tenant, sid, context_id)
    assert row["source"] == "context"
    assert row["messages_sha256"] == messages_sha256(context["messages"])
    assert row["message_count"] == len(context["messages"])
    assert expand_ranges(row["tail"]["ranges"]) == context["stats"]["included_seqs"]
    assert row["tail"]["start_seq"] == context["stats"]["included_seqs"][0]
    assert row["tail"]["end_seq"] == context["stats"]["included_seqs"][-1]
    filled = context["stats"]["filled_range"]
    assert filled is not None
    assert [row["filled"]["start_seq"], row["filled"]["end_seq"]] == [
        filled["start_seq"],
        filled["end_seq"],
    ]
    assert row["cleared_seqs"] == context["stats"]["clearing"]["cleared_seqs"]
    assert row["cleared_seqs"], "the tool result is older than the newest 0"
    summary = row["summary"]
    assert summary["archive_seq"] == context["working_memory"]["archive_seq"]
    assert summary["covered_end_seq"] == context["working_memory"]["covered_end_seq"]
    assert [ref["section"] for ref in summary["sections"]] == list(
        context["working_memory"]["sections"]
    )
    assert row["pins"] == {"pin_ids": [pinned.json()["pin_id"]], "sent": 1}
    assert row["options"]["token_budget"] == 4000
    assert row["options"]["fill"] is True
    assert row["options"]["clear_tool_results"] == 0
    tokens = context["tokens"]
    assert row["tokens"]["total"] == tokens["total"]
    assert row["tokens"]["wm"] == tokens["wm"]
    assert row["tokens"]["pinned"] == tokens["pinned"]
    assert row["tokens"]["filled"] == tokens["filled"]
    assert row["tokens"]["messages"] + row["tokens"]["filled"] == tokens["messages"]
    assert row["hint"]["form"] == "with_summary"

    # Never a copy of a text: no message, pin or summary text is in the stored row.
    async with admin_database.sessions() as db:
        stored = await db.scalar(
            text("SELECT row_to_json(r)::text FROM context_records r WHERE context_id = :id"),
            {"id": context_id},
        )
    assert stored is not None
    # Needles that no hex digest or uuid can hold by chance.
    for needle in ("blue-green", "INV-7731", "Fridays", "staging port", "listen on"):
        assert needle not in stored, needle


async def test_contexts_are_listed_newest_first_with_a_cursor(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await a_session_with_history(client, tenant)
    ids = [
        (await get_context(client, tenant, sid, record="true", token_budget=budget))["context_id"]
        for budget in (2000, 3000, 4000)
    ]
    compacted = await client.post(
        f"/v1/sessions/{sid}/compact", params={"record": "true"}, headers=tenant.write
    )
    assert compacted.status_code == 200, compacted.text
    ids.append(compacted.json()["context_id"])
    seen: list[str] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 3}
        if cursor is not None:
            params["cursor"] = cursor
        page = await client.get(f"/v1/sessions/{sid}/contexts", params=params, headers=tenant.read)
        assert page.status_code == 200, page.text
        seen += [item["context_id"] for item in page.json()["items"]]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))
    newest = await recorded(client, tenant, sid, ids[-1])
    assert newest["source"] == "compact"
    assert newest["tail"]["ranges"] == []
    bad = await client.get(
        f"/v1/sessions/{sid}/contexts", params={"cursor": "nope!"}, headers=tenant.read
    )
    assert bad.status_code == 422


async def test_another_sessions_or_tenants_contexts_answer_as_missing(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    sid = await a_session_with_history(client, tenant)
    other_sid = await create_session(client, tenant)
    context_id = (await get_context(client, tenant, sid, record="true"))["context_id"]
    for path, keys in (
        (f"/v1/sessions/{other_sid}/contexts/{context_id}", tenant),
        (f"/v1/sessions/{sid}/contexts/{uuid.uuid4()}", tenant),
        (f"/v1/sessions/{sid}/contexts/{context_id}", other_tenant),
        (f"/v1/sessions/{sid}/contexts", other_tenant),
    ):
        response = await client.get(path, headers=keys.read)
        assert response.status_code == 404, (path, response.text)
        assert response.json()["type"] == "not_found"
    listed = await client.get(f"/v1/sessions/{other_sid}/contexts", headers=tenant.read)
    assert listed.json() == {"items": [], "next_cursor": None}


async def test_retracted_and_redacted_messages_are_named(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    await append(
        client,
        tenant,
        sid,
        [user("first"), assistant("one"), user("a secret to redact"), assistant("two")],
    )
    retracted = await client.post(
        f"/v1/sessions/{sid}/messages:retract", json={}, headers=tenant.write
    )
    assert retracted.status_code == 200, retracted.text
    redacted = await client.post(
        f"/v1/sessions/{sid}/messages/3:redact", json={"reason": "test"}, headers=tenant.write
    )
    assert redacted.status_code == 200, redacted.text
    await append(client, tenant, sid, [user("and now?")])
    context = await get_context(client, tenant, sid, record="true")
    row = await recorded(client, tenant, sid, context["context_id"])
    retracted_seq = retracted.json()["retracted"]["seq"]
    assert row["retracted_seqs"] == [retracted_seq]
    assert retracted_seq not in expand_ranges(row["tail"]["ranges"])
    assert row["redacted_seqs"] == [3]
    assert json.dumps(row).count("a secret") == 0
