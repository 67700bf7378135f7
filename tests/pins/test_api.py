"""Pins through the API: pin a text or a message's exact text, list, unpin, the token limit,
roles and tenants, every pin and unpin a row with who and when, and the [Pinned] block in the
context (DESIGN 18)."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import text

from app.db import Database
from tests.conftest import TenantKeys
from tests.context.helpers import SUMMARY_PREFIX, assert_well_formed, get_context
from tests.support.api import append, assistant, commit, create_session, user


async def pin(client: httpx.AsyncClient, keys: TenantKeys, sid: str, **body: Any) -> httpx.Response:
    return await client.post(f"/v1/sessions/{sid}/pins", json=body, headers=keys.write)


async def listed(
    client: httpx.AsyncClient, keys: TenantKeys, sid: str, **params: Any
) -> dict[str, Any]:
    response = await client.get(f"/v1/sessions/{sid}/pins", params=params, headers=keys.read)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_pin_list_and_unpin_each_leave_a_row_with_who_and_when(
    client: httpx.AsyncClient, tenant: TenantKeys, admin_database: Database
) -> None:
    sid = await create_session(client, tenant)
    made = await pin(
        client, tenant, sid, text="  Never deploy on Fridays  ", section="Task & Goals"
    )
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["text"] == "Never deploy on Fridays"
    assert body["section"] == "Task & Goals"
    assert body["message_seq"] is None
    assert body["token_count"] > 0
    assert body["unpinned_at"] is None
    # A reader may list, never pin or unpin.
    page = await listed(client, tenant, sid)
    assert [item["pin_id"] for item in page["items"]] == [body["pin_id"]]
    assert page["tokens"] == body["token_count"]
    assert page["max_tokens"] == 2000
    denied = await client.post(f"/v1/sessions/{sid}/pins", json={"text": "x"}, headers=tenant.read)
    assert denied.status_code == 403
    denied = await client.delete(f"/v1/sessions/{sid}/pins/{body['pin_id']}", headers=tenant.read)
    assert denied.status_code == 403

    gone = await client.delete(f"/v1/sessions/{sid}/pins/{body['pin_id']}", headers=tenant.write)
    assert gone.status_code == 204
    assert (await listed(client, tenant, sid))["items"] == []
    every = await listed(client, tenant, sid, include_unpinned=True)
    assert every["tokens"] == 0
    assert every["items"][0]["unpinned_at"] is not None
    assert every["items"][0]["unpinned_by"] == every["items"][0]["pinned_by"]
    again = await client.delete(f"/v1/sessions/{sid}/pins/{body['pin_id']}", headers=tenant.write)
    assert again.status_code == 404
    assert again.headers["content-type"].startswith("application/problem+json")

    async with admin_database.tenant(tenant.tenant_id) as db:
        events = (
            await db.execute(
                text(
                    "SELECT event, actor, text, created_at FROM pin_events "
                    "WHERE agent_session_id = :sid ORDER BY event_id"
                ),
                {"sid": sid},
            )
        ).all()
    assert [(e.event, str(e.actor), e.text) for e in events] == [
        ("pin", body["pinned_by"], "Never deploy on Fridays"),
        ("unpin", body["pinned_by"], "Never deploy on Fridays"),
    ]
    assert events[0].created_at <= events[1].created_at


async def test_a_pin_of_a_message_keeps_its_exact_text(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    exact = "Refunds   above 500 EUR need the CFO's sign-off.\n  Keep   this spacing."
    await append(client, tenant, sid, [user(exact), assistant("Understood."), user("")])
    made = await pin(client, tenant, sid, message_seq=1)
    assert made.status_code == 201, made.text
    assert made.json()["text"] == exact
    assert made.json()["message_seq"] == 1
    context = await get_context(client, tenant, sid)
    assert_well_formed(context)
    assert f"- (message 1, exact text) {exact}" in context["messages"][0]["content"]
    for seq, problem in ((99, "has no message 99"), (3, "message 3 has no text to pin")):
        refused = await pin(client, tenant, sid, message_seq=seq)
        assert refused.status_code == 422, refused.text
        assert problem in refused.json()["detail"]
        assert refused.json()["errors"][0]["loc"] == ["body", "message_seq"]
    assert len((await listed(client, tenant, sid))["items"]) == 1


async def test_bad_pins_are_refused_with_nothing_stored(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    for body in (
        {},
        {"text": "a", "message_seq": 1},
        {"text": "   "},
        {"text": ""},
        {"text": "x", "section": "Nonsense"},
        {"text": "x", "colour": "red"},
        {"message_seq": 0},
        {"message_seq": 2**63},
    ):
        refused = await pin(client, tenant, sid, **body)
        assert refused.status_code == 422, (body, refused.text)
        assert refused.headers["content-type"].startswith("application/problem+json")
    assert (await listed(client, tenant, sid, include_unpinned=True))["items"] == []


async def test_the_pins_of_an_agent_session_hold_at_most_the_limit_in_all(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    # "word " is one token each: 1 999 tokens, then the limit exactly, then one above.
    first = await pin(client, tenant, sid, text="word " * 1_999)
    assert first.status_code == 201, first.text
    assert first.json()["token_count"] == 1_999
    over = await pin(client, tenant, sid, text="two words")
    assert over.status_code == 422
    assert "at most 2000 tokens" in over.json()["detail"]
    assert over.json()["errors"][0]["loc"] == ["body", "text"]
    exact = await pin(client, tenant, sid, text="word")
    assert exact.status_code == 201, exact.text
    assert (await listed(client, tenant, sid))["tokens"] == 2_000
    # Unpinning frees the room.
    await client.delete(f"/v1/sessions/{sid}/pins/{first.json()['pin_id']}", headers=tenant.write)
    assert (await pin(client, tenant, sid, text="two words")).status_code == 201


async def test_another_tenants_agent_session_and_pins_are_not_found(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    made = (await pin(client, tenant, sid, text="Only ours")).json()
    assert (await pin(client, other_tenant, sid, text="theirs")).status_code == 404
    seen = await client.get(f"/v1/sessions/{sid}/pins", headers=other_tenant.read)
    assert seen.status_code == 404
    removed = await client.delete(
        f"/v1/sessions/{sid}/pins/{made['pin_id']}", headers=other_tenant.write
    )
    assert removed.status_code == 404
    assert len((await listed(client, tenant, sid))["items"]) == 1


async def test_pins_go_in_every_context_right_after_the_summary(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    await append(
        client,
        tenant,
        sid,
        [user(f"Question {n} about flight HAT{n:03d}?") for n in range(20)],
    )
    assert (await commit(client, tenant, sid, keep_recent_count=2, wait=True)).status_code == 200
    first = (await pin(client, tenant, sid, text="The customer is a gold member")).json()
    second = (await pin(client, tenant, sid, text="Quote prices in EUR")).json()
    context = await get_context(client, tenant, sid, token_budget=4_000)
    assert_well_formed(context)
    messages = context["messages"]
    assert messages[0]["content"].startswith(SUMMARY_PREFIX)
    block = messages[1]["content"]
    assert block.startswith("[Pinned]\n")
    assert block.index("gold member") < block.index("in EUR")
    assert context["tokens"]["pinned"] > 0
    assert context["stats"]["pins"] == {
        "in_force": 2,
        "sent": [first["pin_id"], second["pin_id"]],
        "left_out": 0,
    }
    # As the budget shrinks, the summary goes, every section of it, before a pin does.
    pins_alone = 0
    for budget in range(60, 700, 8):
        tight = await get_context(client, tenant, sid, token_budget=budget, reserve_tokens=0)
        assert_well_formed(tight)
        if tight["stats"]["pins"]["left_out"]:
            assert tight["stats"]["summary_omitted"] is True
        if tight["stats"]["summary_omitted"] and not tight["stats"]["pins"]["left_out"]:
            assert tight["messages"][0]["content"].startswith("[Pinned]\n")
            pins_alone += 1
    assert pins_alone > 0
    await client.delete(f"/v1/sessions/{sid}/pins/{first['pin_id']}", headers=tenant.write)
    after = await get_context(client, tenant, sid, token_budget=4_000)
    assert "gold member" not in after["messages"][1]["content"]
    assert after["stats"]["pins"]["sent"] == [second["pin_id"]]
