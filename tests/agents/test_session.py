"""``WorkmemSession`` under a real ``Runner`` of the OpenAI Agents SDK, whose model is the SDK's
default Responses API model against the local OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
from agents import Agent, OpenAIResponsesModel, Runner, function_tool

from app.agents import WorkmemSession
from app.client import AsyncWorkmemClient
from tests.conftest import TenantKeys
from tests.support.fake_openai import FakeOpenAI, TextReply, ToolCallReply

Factory = Callable[[str], AsyncWorkmemClient]


def agent(fake: FakeOpenAI, **extra: Any) -> Agent[None]:
    client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=0)
    return Agent(
        name="travel",
        instructions="You book trips.",
        model=OpenAIResponsesModel(model="m", openai_client=client),
        **extra,
    )


def model_inputs(fake: FakeOpenAI) -> list[list[dict[str, Any]]]:
    """The ``input`` of every Responses request the model server accepted."""
    return [
        request.body["input"]
        for request in fake.requests
        if request.path == "/v1/responses" and request.status == 200
    ]


async def test_the_second_turn_sees_the_first_turns_working_memory(
    workmem_for: Factory, tenant: TenantKeys, fake_openai: FakeOpenAI
) -> None:
    fake_openai.push(TextReply("Noted: flight UA123 to Lisbon."), TextReply("You fly UA123."))
    async with workmem_for(tenant.writer) as workmem:
        session = WorkmemSession(
            "trip-1",
            workmem,
            commit_threshold_tokens=0,
            commit_wait=True,
            keep_recent_count=0,
            user_id="rui",
        )
        first = await Runner.run(
            agent(fake_openai),
            "Book me on flight UA123 to Lisbon on 2026-03-14. Never book aisle seats.",
            session=session,
        )
        assert first.final_output == "Noted: flight UA123 to Lisbon."
        agent_session_id = await session.agent_session_id()
        assert agent_session_id is not None
        current = await workmem.working_memory(agent_session_id)
        # The runner saves its input before the model call and the reply after: both appends
        # passed the threshold, and the working memory covers the whole first turn.
        assert current.covered_end_seq == 2

        second = await Runner.run(agent(fake_openai), "Which flight am I on?", session=session)
        assert second.final_output == "You fly UA123."

    turn_one, turn_two = model_inputs(fake_openai)
    assert turn_one == [
        {
            "role": "user",
            "content": "Book me on flight UA123 to Lisbon on 2026-03-14. Never book aisle seats.",
        }
    ]
    hint, summary, question = turn_two
    assert hint["role"] == "system"
    assert f"/v1/sessions/{agent_session_id}/archives/" in hint["content"]
    assert summary["role"] == "user"
    assert summary["content"].startswith("[Session History Summary]")
    assert "UA123" in summary["content"]
    assert "Never book aisle seats" in summary["content"]
    assert question == {"role": "user", "content": "Which flight am I on?"}
    # The first turn reaches the model through the working memory only, not as raw messages.
    assert not any(item.get("content") == turn_one[0]["content"] for item in turn_two)


async def test_tool_calls_are_stored_whole_and_sent_back_valid(
    workmem_for: Factory, tenant: TenantKeys, fake_openai: FakeOpenAI
) -> None:
    @function_tool
    def seat_map(flight: str) -> str:
        """The free seats of a flight."""
        return f"{flight}: 12A window, 12C aisle"

    fake_openai.push(
        ToolCallReply(json.dumps({"flight": "UA123"}), name="seat_map"),
        TextReply("12A is a free window seat."),
        TextReply("Still 12A."),
    )
    async with workmem_for(tenant.writer) as workmem:
        session = WorkmemSession("trip-tools", workmem)
        travel = agent(fake_openai, tools=[seat_map])
        await Runner.run(travel, "Which window seat is free on UA123?", session=session)
        await Runner.run(travel, "And now?", session=session)
        agent_session_id = await session.agent_session_id()
        assert agent_session_id is not None
        stored = [m.message for m in (await workmem.messages(agent_session_id)).items]
    roles = [m["role"] for m in stored]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert stored[1]["tool_calls"][0]["function"]["name"] == "seat_map"
    assert stored[2]["content"] == "UA123: 12A window, 12C aisle"
    # The third request carried the whole tool group back; the strict server accepted it. (No
    # system item: nothing is archived yet, so there is no hint.)
    third = model_inputs(fake_openai)[2]
    kinds = [item.get("type", item.get("role")) for item in third]
    assert kinds == ["user", "function_call", "function_call_output", "assistant", "user"]
    assert third[1]["call_id"] == third[2]["call_id"]


async def test_pop_item_retracts_and_clear_session_erases(
    workmem_for: Factory, tenant: TenantKeys, fake_openai: FakeOpenAI
) -> None:
    fake_openai.push(TextReply("Paris it is."))
    async with workmem_for(tenant.writer) as workmem:
        session = WorkmemSession("trip-undo", workmem, include_hint=False)
        assert await session.pop_item() is None, "no agent session yet"
        await Runner.run(agent(fake_openai), "Let's go to Paris.", session=session)
        assert await session.get_items() == [
            {"role": "user", "content": "Let's go to Paris."},
            {"role": "assistant", "content": "Paris it is."},
        ]
        assert await session.get_items(limit=1) == [
            {"role": "assistant", "content": "Paris it is."}
        ]

        popped = await session.pop_item()
        assert popped == {"role": "assistant", "content": "Paris it is."}
        assert await session.get_items() == [{"role": "user", "content": "Let's go to Paris."}]
        assert await session.pop_item() == {"role": "user", "content": "Let's go to Paris."}
        assert await session.get_items() == []
        assert await session.pop_item() is None
        agent_session_id = await session.agent_session_id()
        assert agent_session_id is not None
        # Retracted, not deleted: the stored history keeps both.
        assert len((await workmem.messages(agent_session_id)).items) == 2

        # A message of several items loses only its last one.
        await session.add_items(
            [
                {"role": "user", "content": "Seat?"},
                {"role": "assistant", "content": "Let me check."},
                {"type": "function_call", "call_id": "c9", "name": "seat_map", "arguments": "{}"},
            ]
        )
        last = await session.pop_item()
        assert last == {
            "type": "function_call",
            "call_id": "c9",
            "name": "seat_map",
            "arguments": "{}",
        }
        assert await session.get_items() == [
            {"role": "user", "content": "Seat?"},
            {"role": "assistant", "content": "Let me check."},
        ]

        await session.clear_session()
        assert await session.get_items() == []
        assert await workmem.find_session("trip-undo") is None
        await session.add_items([{"role": "user", "content": "Start over."}])
        fresh = await session.agent_session_id()
        assert fresh is not None
        assert fresh != agent_session_id
        assert await session.get_items() == [{"role": "user", "content": "Start over."}]
