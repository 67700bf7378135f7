"""``GET …/context?recall=<query>``: the user's memories as one block after the summary."""

from __future__ import annotations

from typing import Any

import httpx

from app.context.recall import RECALL_HEADER
from tests.conftest import TenantKeys
from tests.context.helpers import get_context
from tests.memories.helpers import memories, new_session, state
from tests.support.api import append

SUMMARY = "[Session History Summary]"


def blocks(context: dict[str, Any]) -> list[str]:
    return [str(message["content"]).split("\n", 1)[0] for message in context["messages"]]


async def test_recall_puts_the_user_s_memories_after_the_summary(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    other = await new_session(client, tenant, "ben")
    await state(client, tenant, other, "My favorite color is green.")
    agent_session_id = await new_session(client, tenant, "ana")
    await state(
        client,
        tenant,
        agent_session_id,
        "My favorite color is teal.",
        "I work as a nurse at the city hospital.",
        "I went to a pottery class last Saturday.",
    )
    await append(client, tenant, agent_session_id, [{"role": "user", "content": "What now?"}])

    plain = await get_context(client, tenant, agent_session_id, token_budget=8000)
    assert RECALL_HEADER not in blocks(plain)
    assert (plain["tokens"]["memories"], plain["stats"]["recall"]) == (0, None)

    context = await get_context(
        client, tenant, agent_session_id, token_budget=8000, recall="favorite color"
    )
    assert blocks(context)[:3] == [SUMMARY, RECALL_HEADER, "What now?"]
    block = context["messages"][1]
    assert block["role"] == "user"
    assert "My favorite color is teal." in block["content"]
    assert "green" not in block["content"], "another user's memory was recalled"
    recall = context["stats"]["recall"]
    assert recall["query"] == "favorite color"
    assert recall["found"] == len(recall["memories"]) >= 1
    assert recall["left_out"] == 0
    ana = {m["id"]: m for m in await memories(client, tenant.reader, user_id="ana")}
    assert {m["id"] for m in recall["memories"]} <= set(ana)
    assert recall["memories"][0]["id"] == next(
        i for i, m in ana.items() if m["content"] == "My favorite color is teal."
    )
    tokens = context["tokens"]
    assert tokens["memories"] > 0
    assert tokens["total"] == (
        tokens["system_prompt_addition"] + tokens["wm"] + tokens["memories"] + tokens["messages"]
    )
    assert tokens["total"] <= tokens["usable"]


async def test_recall_honours_limit_min_score_and_the_budget(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await new_session(client, tenant, "cy")
    facts = [f"My favorite {thing} is {value}." for thing, value in [
        ("color", "teal"), ("book", "Dune"), ("food", "ramen"), ("city", "Kyoto"),
        ("song", "Hallelujah"), ("sport", "tennis"), ("movie", "Alien"),
    ]]  # fmt: skip
    await state(client, tenant, agent_session_id, *facts)
    query = "my favorite color book food city song sport movie"
    full = await get_context(client, tenant, agent_session_id, recall=query)
    assert len(full["stats"]["recall"]["memories"]) == 5, "at most five memories are recalled"
    two = await get_context(client, tenant, agent_session_id, recall=query, recall_limit=2)
    assert [m["id"] for m in two["stats"]["recall"]["memories"]] == [
        m["id"] for m in full["stats"]["recall"]["memories"][:2]
    ]
    strict = await get_context(
        client, tenant, agent_session_id, recall=query, recall_min_score=0.99
    )
    assert strict["stats"]["recall"]["memories"] == []
    assert RECALL_HEADER not in blocks(strict)
    # A small budget keeps recall to a quarter of what is usable: some memories stay out.
    small = await get_context(
        client, tenant, agent_session_id, recall=query, token_budget=500, reserve_tokens=0
    )
    recall = small["stats"]["recall"]
    assert recall["left_out"] > 0
    assert recall["found"] == len(recall["memories"]) + recall["left_out"]
    assert small["tokens"]["memories"] <= small["tokens"]["usable"] // 4


async def test_a_superseded_preference_is_never_recalled(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await new_session(client, tenant, "dee")
    await state(client, tenant, agent_session_id, "I really love strong black coffee.")
    await state(client, tenant, agent_session_id, "I don't like strong black coffee anymore.")
    context = await get_context(client, tenant, agent_session_id, recall="strong black coffee")
    block = context["messages"][1]["content"]
    assert "I don't like strong black coffee anymore." in block
    assert "I really love strong black coffee." not in block


async def test_sessions_without_a_user_recall_only_memories_without_one(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    await state(
        client, tenant, await new_session(client, tenant, "eve"), "My favorite color is red."
    )
    anonymous = await new_session(client, tenant, None)
    await state(client, tenant, anonymous, "My favorite color is blue.")
    context = await get_context(client, tenant, anonymous, recall="favorite color")
    block = context["messages"][1]["content"]
    assert "blue" in block
    assert "red" not in block


async def test_bad_recall_input_is_refused(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    agent_session_id = await new_session(client, tenant, "fay")
    cases: list[dict[str, str | int]] = [
        {"recall": " "},
        {"recall": "a\x00b"},
        {"recall": "x", "recall_limit": 6},
    ]
    for params in cases:
        response = await client.get(
            f"/v1/sessions/{agent_session_id}/context", params=params, headers=tenant.read
        )
        assert response.status_code == 422, params
