"""``WorkmemSession`` under a real ``Runner`` of the OpenAI Agents SDK in each of its modes
(``run``, ``run_streamed``, ``run_sync``), against the real ``workmem serve``; the model is the
SDK's default Responses API model against the local OpenAI-compatible server. The same script is
run with the SDK's own ``SQLiteSession``: both sessions hold the same items and the model gets
the same input, until a commit puts the working memory in place of older items."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import openai
import pytest
from agents import Agent, OpenAIResponsesModel, Runner, SQLiteSession, function_tool
from agents.memory import Session, SessionSettings

from tests.support.fake_openai import FakeOpenAI, TextReply, ToolCallReply
from workmem_client import WorkmemClient
from workmem_client.agents import WorkmemSession

pytestmark = pytest.mark.e2e

Turn = Callable[[Agent[None], str, Session], Awaitable[Any]]


@function_tool
def seat_map(flight: str) -> str:
    """The free seats of a flight."""
    return f"{flight}: 12A window, 12C aisle — fenêtre 窓側"


def agent(fake: FakeOpenAI, **extra: Any) -> Agent[None]:
    client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=0)
    return Agent(
        name="travel",
        instructions="You book trips.",
        model=OpenAIResponsesModel(model="m", openai_client=client),
        tools=[seat_map],
        **extra,
    )


def model_inputs(fake: FakeOpenAI) -> list[list[dict[str, Any]]]:
    """The ``input`` of every Responses request the model server accepted."""
    return [
        request.body["input"]
        for request in fake.requests
        if request.path == "/v1/responses" and request.status == 200
    ]


def script() -> list[TextReply | ToolCallReply]:
    """Two turns: a reasoning step and a tool call, then the answer; then a plain answer."""
    return [
        ToolCallReply(json.dumps({"flight": "UA123"}), name="seat_map", reasoning="Check seats."),
        TextReply("12A is a free window seat. 👍", reasoning="12A is a window."),
        TextReply("Still 12A — naturellement."),
    ]


QUESTIONS = ["Which window seat is free on UA123? Ça va?", "And now?"]


async def run(travel: Agent[None], question: str, session: Session) -> Any:
    return await Runner.run(travel, question, session=session)


async def run_streamed(travel: Agent[None], question: str, session: Session) -> Any:
    result = Runner.run_streamed(travel, question, session=session)
    events = [event.type async for event in result.stream_events()]
    assert "run_item_stream_event" in events
    return result


async def conversation(session: Session, turn: Turn) -> tuple[list[Any], list[Any]]:
    """Run the two turns on a model server of their own; the session's items and the model's
    inputs."""
    with FakeOpenAI() as fake:
        fake.push(*script())
        for question in QUESTIONS:
            await turn(agent(fake), question, session)
    assert not fake.errors
    return await session.get_items(), model_inputs(fake)


@pytest.mark.parametrize("turn", [run, run_streamed], ids=["run", "run_streamed"])
async def test_the_runner_sees_what_it_sees_with_its_own_session(
    workmem: WorkmemClient, name: str, turn: Turn
) -> None:
    own_items, own_inputs = await conversation(SQLiteSession(name), turn)
    items, inputs = await conversation(WorkmemSession(name, workmem), turn)
    assert items == own_items
    assert inputs == own_inputs
    kinds = [item.get("type", "message") for item in items]
    assert kinds == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "reasoning",
        "message",
        "message",
        "message",
    ]
    # What the SDK's helpers read from an assistant message.
    assert items[5]["content"][0]["text"] == "12A is a free window seat. 👍"


async def test_the_runner_honours_the_sessions_limit_as_with_its_own_session(
    workmem: WorkmemClient, name: str
) -> None:
    limit = SessionSettings(limit=3)
    own = SQLiteSession(name, session_settings=limit)
    ours = WorkmemSession(name, workmem, session_settings=limit)
    own_items, own_inputs = await conversation(own, run)
    items, inputs = await conversation(ours, run)
    assert items == own_items
    assert len(items) == 3
    # The second turn's model input: the newest 3 items of the session, the question last.
    assert inputs == own_inputs
    assert len(inputs[-1]) == 3
    assert inputs[-1][-1] == {"role": "user", "content": QUESTIONS[1]}


def test_run_sync_on_threads_with_one_session(workmem: WorkmemClient, name: str) -> None:
    """``run_sync`` drives the thread's own event loop: each thread here has another, and the
    one session serves them all, as the SDK's own session does."""
    sessions: dict[str, Session] = {
        "own": SQLiteSession(name),
        "workmem": WorkmemSession(name, workmem),
    }
    found: dict[str, list[Any]] = {}
    failures: list[BaseException] = []

    def on_a_thread(work: Callable[[], object], *, own_loop: bool = True) -> None:
        def body() -> None:
            try:
                work()
            except BaseException as error:
                failures.append(error)
            if own_loop:  # run_sync leaves the thread's loop open for the next call
                asyncio.get_event_loop_policy().get_event_loop().close()

        thread = threading.Thread(target=body)
        thread.start()
        thread.join()

    for label, session in sessions.items():
        with FakeOpenAI() as fake:
            fake.push(*script())
            for question in QUESTIONS:

                def turn(q: str = question, s: Session = session, f: FakeOpenAI = fake) -> None:
                    Runner.run_sync(agent(f), q, session=s)

                on_a_thread(turn)

        async def items(s: Session = session, key: str = label) -> None:
            found[key] = await s.get_items()

        def read(work: Callable[[], Coroutine[Any, Any, None]] = items) -> None:
            asyncio.run(work())

        on_a_thread(read, own_loop=False)
        found[f"{label} inputs"] = model_inputs(fake)
    assert not failures
    assert found["workmem"] == found["own"]
    assert found["workmem inputs"] == found["own inputs"]
    assert len(found["workmem"]) == 8


async def test_the_second_turn_sees_the_first_turns_working_memory(
    workmem: WorkmemClient, name: str, fake_openai: FakeOpenAI
) -> None:
    fake_openai.push(TextReply("Noted: flight UA123 to Lisbon."), TextReply("You fly UA123."))
    session = WorkmemSession(
        name,
        workmem,
        commit_threshold_tokens=0,
        commit_wait=True,
        keep_recent_count=0,
        user_id="rui",
    )
    travel = agent(fake_openai)
    first = await Runner.run(
        travel,
        "Book me on flight UA123 to Lisbon on 2026-03-14. Never book aisle seats.",
        session=session,
    )
    assert first.final_output == "Noted: flight UA123 to Lisbon."
    agent_session_id = await session.agent_session_id()
    assert agent_session_id is not None
    # The runner saves its input before the model call and the reply after: both appends
    # passed the threshold, and the working memory covers the whole first turn.
    assert workmem.working_memory(agent_session_id).covered_end_seq == 2

    second = await Runner.run(travel, "Which flight am I on?", session=session)
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


async def test_tool_calls_are_stored_as_chat_messages_and_sent_back_valid(
    workmem: WorkmemClient, name: str, fake_openai: FakeOpenAI
) -> None:
    fake_openai.push(*script())
    session = WorkmemSession(name, workmem)
    for question in QUESTIONS:
        await Runner.run(agent(fake_openai), question, session=session)
    agent_session_id = await session.agent_session_id()
    assert agent_session_id is not None
    stored = [m.message for m in workmem.messages(agent_session_id).items]
    # What the working memory, the context and chat models read.
    assert [m["role"] for m in stored] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert stored[1]["tool_calls"][0]["function"]["name"] == "seat_map"
    assert stored[2]["content"] == "UA123: 12A window, 12C aisle — fenêtre 窓側"
    assert stored[3]["content"] == "12A is a free window seat. 👍"
    # The third request carried the whole tool group back, reasoning included; the strict
    # server accepted it.
    third = model_inputs(fake_openai)[2]
    kinds = [item.get("type", item.get("role")) for item in third]
    assert kinds == [
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
        "reasoning",
        "message",
        "user",
    ]
