"""The example agent loop, run against the in-process app (its background worker on) through the
typed client over an ASGI transport, and against the strict local OpenAI-compatible server
through the real SDK."""

from __future__ import annotations

import asyncio
import time

import httpx
import openai
from asgi_lifespan import LifespanManager

from app.config import Settings
from app.db import Database
from app.main import create_app
from examples.agent_loop import AgentLoop, LoopConfig
from tests.conftest import make_tenant
from tests.context.helpers import SUMMARY_PREFIX, stored_messages
from tests.support.fake_openai import FakeOpenAI, TextReply, ToolCallReply
from workmem_client import AsyncWorkmemClient


async def wait_until_done(workmem: AsyncWorkmemClient, agent_session_id: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        items = (await workmem.archives(agent_session_id)).items
        if items and all(item.status == "done" for item in items):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the background worker did not finish the archives")


def user_text(turn: int) -> str:
    return f"Turn {turn}: the parcel for order {1000 + turn} goes to dock {turn % 7}. " * 6


async def test_the_agent_loop_commits_and_calls_the_model_with_the_assembled_context(
    own_database: Database, settings: Settings, fake_openai: FakeOpenAI
) -> None:
    keys = await make_tenant(own_database)
    fake_openai.default_reply = TextReply("Noted: " + "the dock schedule is clear. " * 4)
    config = LoopConfig(model="m", commit_threshold_tokens=200, token_budget=4_000)
    app = create_app(
        settings.model_copy(update={"worker_enabled": True, "worker_poll_s": 0.05}),
        database=own_database,
    )
    async with (
        LifespanManager(app) as manager,
        AsyncWorkmemClient(
            "http://workmem.test", keys.writer, transport=httpx.ASGITransport(app=manager.app)
        ) as workmem,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://workmem.test"
        ) as http,
        openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key="x", max_retries=0) as model,
    ):
        agent_session_id = str((await workmem.create_session(external_id="agent-loop")).id)
        loop = AgentLoop(workmem, model, agent_session_id, config)
        for turn in range(12):
            assert (await loop.turn(user_text(turn))).startswith("Noted:")
        assert loop.commits >= 2
        await wait_until_done(workmem, agent_session_id)

        # The model reads an archive, then answers: the tool group is stored whole and sent back.
        fake_openai.push(
            ToolCallReply('{"archive_seq": 1}', name="read_archive"),
            TextReply("Order 1000 went to dock 0."),
        )
        answer = await loop.turn("Which dock did the very first order go to?")
        assert answer == "Order 1000 went to dock 0."
        stored = [m["message"] for m in await stored_messages(http, keys, agent_session_id)]

    requests = fake_openai.requests
    assert requests, "the model was never called"
    assert all(request.status == 200 for request in requests), "a request was rejected"
    last = requests[-1].body["messages"]
    assert last[0]["role"] == "system"
    assert f"GET /v1/sessions/{agent_session_id}/archives/{{archive_seq}}" in last[0]["content"]
    assert last[1]["role"] == "user"
    assert last[1]["content"].startswith(SUMMARY_PREFIX)
    assert not any(user_text(0) == m.get("content") for m in last), "turn 0 is summarised"
    call, result = last[-2:]
    assert call["tool_calls"][0]["function"]["name"] == "read_archive"
    assert result["role"] == "tool"
    assert result["tool_call_id"] == call["tool_calls"][0]["id"]
    assert "order 1000 goes to dock 0" in result["content"]
    assert any(request.body.get("tools") for request in requests)

    roles = [m["role"] for m in stored]
    assert roles.count("user") == 13
    assert roles[-3:] == ["assistant", "tool", "assistant"]


async def test_a_loop_that_fills_its_budget_sends_recent_covered_turns_raw(
    own_database: Database, settings: Settings, fake_openai: FakeOpenAI
) -> None:
    keys = await make_tenant(own_database)
    fake_openai.default_reply = TextReply("Noted.")
    config = LoopConfig(model="m", commit_threshold_tokens=200, token_budget=4_000, fill=True)
    app = create_app(
        settings.model_copy(update={"worker_enabled": True, "worker_poll_s": 0.05}),
        database=own_database,
    )
    async with (
        LifespanManager(app) as manager,
        AsyncWorkmemClient(
            "http://workmem.test", keys.writer, transport=httpx.ASGITransport(app=manager.app)
        ) as workmem,
        openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key="x", max_retries=0) as model,
    ):
        agent_session_id = str((await workmem.create_session(external_id="agent-loop-fill")).id)
        loop = AgentLoop(workmem, model, agent_session_id, config)
        for turn in range(12):
            await loop.turn(user_text(turn))
        await wait_until_done(workmem, agent_session_id)
        await loop.turn("And the last order?")
        context = await workmem.context(agent_session_id, token_budget=4_000, fill=True)
        unfilled = await workmem.context(agent_session_id, token_budget=4_000)
    assert context.stats.messages_filled > 0
    last = fake_openai.requests[-1].body["messages"]
    assert last[1]["content"].startswith(SUMMARY_PREFIX)
    assert "repeated raw for their exact wording" in last[0]["content"]
    assert context.working_memory is not None
    assert context.stats.filled_range is not None
    assert context.stats.filled_range.end_seq == context.working_memory.covered_end_seq
    tokens = context.tokens
    assert tokens.filled > 0
    assert unfilled.tokens.total < tokens.total <= tokens.usable
    assert tokens.total >= 0.8 * tokens.usable, "most of the budget is used"
