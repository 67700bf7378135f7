"""The ``Session`` protocol called directly, as the Agents SDK's own session tests call theirs,
on ``WorkmemSession`` against the real ``workmem serve``: items back exactly as added (every
kind, any script), limits, pop and clear, several sessions, any event loop and any thread; then
what only workmem does, older items standing in the working memory after a commit."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from agents.memory import SessionSettings

from tests.agents.catalogue import (
    ASSISTANT_EASY,
    ASSISTANT_OUTPUT,
    CALL,
    EVERY_KIND,
    OUTPUT,
    REASONING,
    UNICODE,
    USER_TEXT,
    WEB_SEARCH,
)
from workmem_client import WorkmemClient
from workmem_client.agents import WorkmemSession

pytestmark = pytest.mark.e2e


def said(text: str, role: str = "user") -> Any:
    return {"role": role, "content": text}


async def test_every_kind_of_item_comes_back_exactly_as_added(
    workmem: WorkmemClient, name: str
) -> None:
    session = WorkmemSession(name, workmem)
    assert await session.get_items() == []
    await session.add_items(EVERY_KIND[:9])
    await session.add_items(EVERY_KIND[9:])
    assert await session.get_items() == EVERY_KIND
    # Another session object (another process, say) reads the same items.
    assert await WorkmemSession(name, workmem).get_items() == EVERY_KIND
    # What the runner's helpers read, e.g. an output message's first text part.
    items: list[Any] = await session.get_items()
    assert items[11]["content"][0]["text"] == f"Booked. {UNICODE}"


async def test_add_items_of_nothing_stores_nothing(workmem: WorkmemClient, name: str) -> None:
    session = WorkmemSession(name, workmem)
    await session.add_items([])
    assert await session.agent_session_id() is None
    assert await session.get_items() == []


async def test_items_without_a_chat_form_alone(workmem: WorkmemClient, name: str) -> None:
    session = WorkmemSession(name, workmem)
    await session.add_items([REASONING])
    await session.add_items([WEB_SEARCH, ASSISTANT_EASY])
    assert await session.get_items() == [REASONING, WEB_SEARCH, ASSISTANT_EASY]
    assert await session.pop_item() == ASSISTANT_EASY
    assert await session.get_items() == [REASONING, WEB_SEARCH]


@pytest.mark.parametrize(
    ("limit", "settings", "expected"),
    [
        (None, None, 5),
        (3, None, 3),
        (None, SessionSettings(limit=3), 3),
        (2, SessionSettings(limit=3), 2),  # an explicit limit wins
        (None, SessionSettings(limit=None), 5),
        (5, None, 5),
        (6, None, 5),
        (1, None, 1),
        (0, None, 0),
        (None, SessionSettings(limit=0), 0),
        (-1, None, 5),  # as the SDK's SQLite session: a negative limit is no limit
    ],
)
async def test_limits(
    workmem: WorkmemClient,
    name: str,
    limit: int | None,
    settings: SessionSettings | None,
    expected: int,
) -> None:
    items = [said(f"message {n} {UNICODE}") for n in range(1, 6)]
    session = WorkmemSession(name, workmem, session_settings=settings)
    await session.add_items(items)
    got = await session.get_items(limit)
    assert got == (items[-expected:] if expected else [])


async def test_pop_item_returns_the_newest_items_in_turn(workmem: WorkmemClient, name: str) -> None:
    session = WorkmemSession(name, workmem)
    assert await session.pop_item() is None, "no agent session yet"
    conversation = [USER_TEXT, REASONING, CALL, OUTPUT, ASSISTANT_OUTPUT]
    await session.add_items(conversation)
    for size in range(len(conversation), 0, -1):
        assert await session.get_items() == conversation[:size]
        assert await session.pop_item() == conversation[size - 1]
    assert await session.get_items() == []
    assert await session.pop_item() is None
    # Popped, not deleted: the stored history keeps every message.
    agent_session_id = await session.agent_session_id()
    assert agent_session_id is not None
    assert len(workmem.messages(agent_session_id).items) >= 4
    await session.add_items([said("again")])
    assert await session.get_items() == [said("again")]


async def test_clear_session_erases_and_starts_over(workmem: WorkmemClient, name: str) -> None:
    session = WorkmemSession(name, workmem)
    await session.clear_session()  # nothing to clear yet
    await session.add_items([said("first"), said("reply", "assistant")])
    first = await session.agent_session_id()
    await session.clear_session()
    assert await session.get_items() == []
    assert workmem.find_session(name) is None
    # Cleared by another session object: this one notices.
    other = WorkmemSession(name, workmem)
    await session.add_items([said("second")])
    await other.clear_session()
    assert await session.get_items() == []
    await session.add_items([said("third")])
    fresh = await session.agent_session_id()
    assert fresh is not None
    assert fresh != first
    assert await session.get_items() == [said("third")]


async def test_several_sessions_keep_their_own_items(workmem: WorkmemClient, name: str) -> None:
    one, two = WorkmemSession(f"{name}-1", workmem), WorkmemSession(f"{name}-2", workmem)
    await asyncio.gather(
        one.add_items([said("for one")]),
        two.add_items([said("for two")]),
    )
    assert await one.get_items() == [said("for one")]
    assert await two.get_items() == [said("for two")]
    await one.clear_session()
    assert await two.get_items() == [said("for two")]


def test_one_session_from_any_event_loop_and_any_thread(workmem: WorkmemClient, name: str) -> None:
    """Each ``asyncio.run`` is a new event loop; threads run theirs at the same time."""
    session = WorkmemSession(name, workmem)
    failures: list[BaseException] = []

    def in_a_thread(work: Any) -> None:
        def run() -> None:
            try:
                asyncio.run(work())
            except BaseException as error:
                failures.append(error)

        thread = threading.Thread(target=run)
        thread.start()
        thread.join()

    async def first() -> None:
        await session.add_items([said("loop one")])

    async def second() -> None:
        assert await session.get_items() == [said("loop one")]
        await session.add_items([said("loop two")])

    in_a_thread(first)
    in_a_thread(second)
    assert not failures

    def writer(index: int) -> None:
        async def work() -> None:
            for turn in range(3):
                await session.add_items([said(f"thread {index} turn {turn}")])

        try:
            asyncio.run(work())
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=writer, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures

    collected: list[list[Any]] = []

    async def collect() -> None:
        collected.append(await session.get_items())

    in_a_thread(collect)
    assert not failures
    [everything] = collected
    assert everything[:2] == [said("loop one"), said("loop two")]
    rest = [item["content"] for item in everything[2:]]
    assert sorted(rest) == sorted(f"thread {i} turn {t}" for i in range(4) for t in range(3))
    for index in range(4):  # each thread's items in its own order
        mine = [text for text in rest if text.startswith(f"thread {index} ")]
        assert mine == [f"thread {index} turn {turn}" for turn in range(3)]


async def test_after_a_commit_the_working_memory_stands_for_older_items(
    workmem: WorkmemClient, name: str
) -> None:
    session = WorkmemSession(name, workmem, keep_recent_count=2, commit_threshold_tokens=None)
    older = [
        said("Book UA123 to Lisbon on 2026-03-14. Never book aisle seats."),
        said("Booked UA123, seat 12A.", "assistant"),
    ]
    recent = [USER_TEXT, REASONING, ASSISTANT_OUTPUT]
    await session.add_items([*older, *recent])
    await session.commit(wait=True)
    items: list[Any] = await session.get_items()
    hint, summary, *live = items
    agent_session_id = await session.agent_session_id()
    assert hint["role"] == "system"
    assert f"/v1/sessions/{agent_session_id}/archives/" in hint["content"]
    assert summary["role"] == "user"
    assert summary["content"].startswith("[Session History Summary]")
    assert "UA123" in summary["content"]
    # keep_recent_count=2 kept two messages raw: the user's, and the reply with its reasoning.
    assert live == recent
    without_hint = WorkmemSession(name, workmem, include_hint=False)
    assert await without_hint.get_items() == [summary, *recent]
    assert await session.get_items(limit=2) == recent[1:]

    # Only live items can be popped: the archived ones are in the working memory.
    assert await session.pop_item() == ASSISTANT_OUTPUT
    assert await session.pop_item() == REASONING
    assert await session.pop_item() == USER_TEXT
    assert await session.pop_item() is None
    assert await session.get_items() == [hint, summary]

    await session.add_items([said("Which seat?"), CALL, OUTPUT])
    assert (await session.get_items())[2:] == [said("Which seat?"), CALL, OUTPUT]


async def test_a_call_awaiting_its_output_comes_back(workmem: WorkmemClient, name: str) -> None:
    """The context leaves out a call still waiting for its output (a chat server would refuse
    it); the session returns it, as the runner saved it."""
    session = WorkmemSession(name, workmem)
    await session.add_items([USER_TEXT, CALL])
    assert await session.get_items() == [USER_TEXT, CALL]
    await session.add_items([OUTPUT])
    assert await session.get_items() == [USER_TEXT, CALL, OUTPUT]


async def test_a_recording_session_leaves_a_ledger_row_per_context_it_reads(
    workmem: WorkmemClient, name: str
) -> None:
    session = WorkmemSession(name, workmem, record=True)
    await session.add_items([said("Book UA123 to Lyon."), said("Done: 12A.", "assistant")])
    assert session.last_context_id is None
    await session.get_items()
    first = session.last_context_id
    assert first is not None
    await session.get_items()
    second = session.last_context_id
    assert second is not None
    assert second != first
    agent_session_id = await session.agent_session_id()
    assert agent_session_id is not None
    listed = workmem.contexts(agent_session_id)
    assert [item.context_id for item in listed.items] == [second, first]
    rendered = workmem.recorded_context(agent_session_id, first, render=True)
    assert rendered.render is not None
    assert rendered.render.matches is True
    # A session that does not record leaves none.
    plain = WorkmemSession(f"{name}-plain", workmem)
    await plain.add_items([said("Hello.")])
    await plain.get_items()
    assert plain.last_context_id is None
    plain_id = await plain.agent_session_id()
    assert plain_id is not None
    assert workmem.contexts(plain_id).items == []
