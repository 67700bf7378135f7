"""``clear_tool_results`` through the API: replayed SWE-agent trajectories sent with older tool
results cleared stay a valid request for the real ``openai`` SDK against the strict local
server, and cost fewer tokens; a placeholder names the request that reads the result back, and
that request returns it whole (DESIGN 18)."""

from __future__ import annotations

from typing import Any, cast

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from app.db import Database
from app.replay.datasets import swe_agent
from tests.conftest import TenantKeys, make_tenant
from tests.context.helpers import assert_well_formed, get_context, replay
from tests.support.api import append, calls, create_session, result, user
from tests.support.datasets import loaded
from tests.support.fake_openai import FakeOpenAI

PLACEHOLDER = "[tool result cleared: "


@pytest.fixture(scope="module")
async def trajectories(
    client: httpx.AsyncClient, database: Database
) -> tuple[TenantKeys, list[str]]:
    keys = await make_tenant(database, "clearing")
    sessions = []
    for conversation in loaded(swe_agent):
        sid = await create_session(client, keys, external_id=conversation.name)
        await replay(client, keys, sid, conversation.messages, every=40)
        sessions.append(sid)
    return keys, sessions


async def test_a_replayed_swe_agent_trajectory_with_clearing_is_a_valid_smaller_request(
    client: httpx.AsyncClient,
    trajectories: tuple[TenantKeys, list[str]],
    fake_openai: FakeOpenAI,
) -> None:
    keys, sessions = trajectories
    model = openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key="x", max_retries=0)
    dropped_somewhere = False
    async with model:
        for sid in sessions:
            for budget in (8_000, 32_000, 128_000):
                params = {"token_budget": budget, "fill": True}
                plain = await get_context(client, keys, sid, **params)
                cleared = await get_context(client, keys, sid, **params, clear_tool_results=2)
                for context in (plain, cleared):
                    assert_well_formed(context)
                    messages = [
                        {
                            "role": "system",
                            "content": "Agent.\n\n" + context["system_prompt_addition"],
                        },
                        *context["messages"],
                    ]
                    completion = await model.chat.completions.create(
                        model="m", messages=cast("list[ChatCompletionMessageParam]", messages)
                    )
                    assert completion.choices[0].message.content == "ok"
                    assert fake_openai.requests[-1].status == 200
                stats = cleared["stats"]["clearing"]
                assert stats["keep"] == 2
                sent = [m for m in cleared["messages"] if m["role"] == "tool"]
                placeholders = [m for m in sent if str(m["content"]).startswith(PLACEHOLDER)]
                assert len(placeholders) == stats["cleared"]
                assert all(not str(m["content"]).startswith(PLACEHOLDER) for m in sent[-2:])
                assert plain["stats"]["clearing"] is None
                if stats["cleared"]:
                    assert stats["tokens_saved"] > 0
                    # The same history costs fewer tokens, or the room went to more history.
                    fewer = cleared["tokens"]["messages"] < plain["tokens"]["messages"]
                    more = len(cleared["messages"]) > len(plain["messages"])
                    assert fewer or more
                    dropped_somewhere |= fewer
    assert dropped_somewhere, "clearing never made a context smaller"


async def test_the_placeholder_names_the_request_that_reads_the_result_whole(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    big = "line of build output\n" * 200
    await append(
        client,
        tenant,
        sid,
        [
            user("Run the build"),
            calls("c1"),
            {**result("c1"), "content": big},
            calls("c2"),
            {**result("c2"), "content": big},
            user("And now?"),
        ],
    )
    context = await get_context(client, tenant, sid, clear_tool_results=1)
    assert_well_formed(context)
    cleared = context["messages"][2]["content"]
    assert cleared.startswith("[tool result cleared: lookup returned ")
    path = cleared.split("GET ")[1].rstrip("]")
    assert path == f"/v1/sessions/{sid}/messages?after_seq=2&limit=1"
    back = await client.get(path, headers=tenant.read)
    assert back.json()["items"][0]["message"]["content"] == big
    assert context["messages"][4]["content"] == big
    assert context["stats"]["clearing"]["cleared_seqs"] == [3]
    excluded = await get_context(
        client, tenant, sid, clear_tool_results=0, clear_tool_results_exclude="lookup,other"
    )
    assert excluded["stats"]["clearing"]["cleared"] == 0
    assert excluded["stats"]["clearing"]["excluded_tools"] == ["lookup", "other"]
    # Compact takes the same option.
    compacted = await client.post(
        f"/v1/sessions/{sid}/compact",
        params={"clear_tool_results": 0, "fill": True},
        headers=tenant.write,
    )
    assert compacted.status_code == 200, compacted.text
    assert compacted.json()["stats"]["clearing"]["cleared"] >= 1


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"clear_tool_results": -1}, "clear_tool_results"),
        ({"clear_tool_results": "two"}, "clear_tool_results"),
        ({"clear_tool_results": 10_001}, "clear_tool_results"),
        ({"clear_tool_results_exclude": "bash"}, "clear_tool_results_exclude"),
    ],
)
async def test_bad_clearing_options_are_a_clear_422(
    client: httpx.AsyncClient, tenant: TenantKeys, params: dict[str, Any], field: str
) -> None:
    sid = await create_session(client, tenant)
    response = await client.get(f"/v1/sessions/{sid}/context", params=params, headers=tenant.read)
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["loc"] == ["query", field]
