"""Rendering a recorded context: rebuilt from the rows it names, it hashes as recorded, byte for
byte, after more appends, commits and pins; when a message it used is redacted, the render says
which (and the hash differs)."""

from __future__ import annotations

from itertools import product
from typing import Any

import httpx

from app.ledger.records import messages_sha256
from tests.conftest import TenantKeys
from tests.context.helpers import get_context
from tests.support.api import append, assistant, calls, commit, create_session, result, user

LONG = "The build log says: " + "compiling module; " * 120


def turn(index: int) -> list[dict[str, Any]]:
    call = f"call_{index}"
    return [
        user(f"Step {index}: I prefer green tea. Check the build of module m{index}."),
        calls(call),
        {**result(call), "content": f"{LONG} #{index}"},
        assistant(f"Module m{index} builds; noted the tea preference."),
    ]


async def rendered(
    client: httpx.AsyncClient, keys: TenantKeys, sid: str, context_id: str
) -> dict[str, Any]:
    response = await client.get(
        f"/v1/sessions/{sid}/contexts/{context_id}", params={"render": "true"}, headers=keys.read
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_every_recorded_context_renders_to_its_hash_after_more_history(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    for index in range(1, 4):
        await append(client, tenant, sid, turn(index))
    assert (await commit(client, tenant, sid, keep_recent_count=3, wait=True)).status_code == 200
    pinned = await client.post(
        f"/v1/sessions/{sid}/pins", json={"text": "Never deploy on Fridays"}, headers=tenant.write
    )
    assert pinned.status_code == 201, pinned.text
    by_seq = await client.post(
        f"/v1/sessions/{sid}/pins", json={"message_seq": 1}, headers=tenant.write
    )
    assert by_seq.status_code == 201, by_seq.text
    for index in range(4, 6):
        await append(client, tenant, sid, turn(index))
    await append(client, tenant, sid, [user("Where were we?")])

    recorded: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for budget, fill, clear, recall in product(
        (120, 200, 300, 600, 900, 2500, 128_000), (False, True), (None, 1), (None, "tea")
    ):
        params: dict[str, Any] = {"record": "true", "token_budget": budget, "fill": str(fill)}
        if budget < 2500:
            params["reserve_tokens"] = 0
        if clear is not None:
            params["clear_tool_results"] = clear
        if recall is not None:
            params["recall"] = recall
        context = await get_context(client, tenant, sid, **params)
        recorded.append((params, context))
    kinds = {
        (
            bool(c["stats"]["wm_cuts"]),
            c["stats"]["summary_omitted"],
            c["stats"]["pins"]["left_out"] > 0,
            c["tokens"]["filled"] > 0,
            bool(c["stats"]["clearing"] and c["stats"]["clearing"]["cleared"]),
            c["tokens"]["memories"] > 0,
        )
        for _, c in recorded
    }
    # The budgets reach every kind of part: cut and whole summaries, pins left out, fill,
    # cleared results and recalled memories.
    assert any(kind[0] for kind in kinds)
    assert any(kind[2] for kind in kinds)
    assert any(kind[3] for kind in kinds)
    assert any(kind[4] for kind in kinds)
    assert any(kind[5] for kind in kinds)

    # More history: appends, a commit (a newer working memory), another pin.
    for index in range(6, 8):
        await append(client, tenant, sid, turn(index))
    assert (await commit(client, tenant, sid, keep_recent_count=2, wait=True)).status_code == 200
    await client.post(f"/v1/sessions/{sid}/pins", json={"text": "Later pin"}, headers=tenant.write)
    await client.delete(f"/v1/sessions/{sid}/pins/{pinned.json()['pin_id']}", headers=tenant.write)

    for params, context in recorded:
        body = await rendered(client, tenant, sid, context["context_id"])
        render = body["render"]
        assert render["unavailable"] == [], params
        assert render["messages"] == context["messages"], params
        assert render["system_prompt_addition"] == context["system_prompt_addition"], params
        assert render["matches"] is True, params
        assert render["system_prompt_addition_matches"] is True, params
        assert render["messages_sha256"] == body["messages_sha256"]
        assert render["messages_sha256"] == messages_sha256(context["messages"])


async def test_a_render_names_a_message_redacted_since(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    await append(client, tenant, sid, turn(1))
    await append(client, tenant, sid, [user("My card number is 4111 1111 1111 1111.")])
    context = await get_context(client, tenant, sid, record="true")
    before = await rendered(client, tenant, sid, context["context_id"])
    assert before["render"]["matches"] is True
    assert before["render"]["unavailable"] == []

    redacted = await client.post(
        f"/v1/sessions/{sid}/messages/5:redact", json={"reason": "a card"}, headers=tenant.write
    )
    assert redacted.status_code == 200, redacted.text
    after = await rendered(client, tenant, sid, context["context_id"])
    render = after["render"]
    assert render["matches"] is False
    assert render["unavailable"] == [{"part": "message", "id": "5", "reason": "redacted"}]
    assert "4111" not in str(render["messages"])
    assert render["messages"][:-1] == context["messages"][:-1]
    # Without render the row is read as it is, and says nothing of what changed since.
    plain = await client.get(
        f"/v1/sessions/{sid}/contexts/{context['context_id']}", headers=tenant.read
    )
    assert plain.json()["render"] is None
