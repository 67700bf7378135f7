"""Agents SDK items and the chat messages that store them, both ways: every kind of item back
exactly as added, and messages stored without items read by their chat form."""

from __future__ import annotations

from typing import Any

import pytest

from tests.agents.catalogue import (
    ASSISTANT_OUTPUT,
    DEVELOPER,
    EVERY_KIND,
    OUTPUT,
    REASONING,
    SYSTEM,
    USER_PARTS,
    USER_TEXT,
    WEB_SEARCH,
)
from tests.agents.catalogue import (
    CALL as FUNCTION_CALL,
)
from tests.agents.catalogue import (
    CALL_2 as FUNCTION_CALL_2,
)
from workmem_client.agents.items import (
    ITEMS_KEY,
    MOVED,
    input_items,
    message_items,
    restored_items,
    stored_messages,
)

CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
CALL_2 = {"id": "call_2", "type": "function", "function": {"name": "g", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("message", "items"),
    [
        ({"role": "user", "content": "hi"}, [{"role": "user", "content": "hi"}]),
        ({"role": "system", "content": "be kind"}, [{"role": "system", "content": "be kind"}]),
        ({"role": "developer", "content": "d"}, [{"role": "developer", "content": "d"}]),
        ({"role": "assistant", "content": "done"}, [{"role": "assistant", "content": "done"}]),
        (
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "a"}, {"type": "refusal", "refusal": "b"}],
            },
            [{"role": "assistant", "content": "ab"}],
        ),
        (
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            [{"type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"a": 1}'}],
        ),
        (
            {"role": "assistant", "content": "Checking.", "tool_calls": [CALL, CALL_2]},
            [
                {"role": "assistant", "content": "Checking."},
                {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "f",
                    "arguments": '{"a": 1}',
                },
                {"type": "function_call", "call_id": "call_2", "name": "g", "arguments": "{}"},
            ],
        ),
        (
            {"role": "tool", "tool_call_id": "call_1", "content": "42"},
            [{"type": "function_call_output", "call_id": "call_1", "output": "42"}],
        ),
        (
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "content": [{"type": "text", "text": "4"}, {"type": "text", "text": "2"}],
            },
            [{"type": "function_call_output", "call_id": "call_1", "output": "42"}],
        ),
        (
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                    {"type": "file", "file": {"file_id": "file_1", "filename": None}},
                ],
            },
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "look"},
                        {"type": "input_image", "image_url": "https://x/y.png", "detail": "auto"},
                        {"type": "input_file", "file_id": "file_1"},
                    ],
                }
            ],
        ),
        ({"role": "function", "content": "legacy"}, []),
    ],
)
def test_message_items(message: dict[str, Any], items: list[dict[str, Any]]) -> None:
    assert message_items(message) == items


def test_input_items_put_the_hint_first() -> None:
    messages = [{"role": "user", "content": "[Session History Summary]\n..."}]
    assert input_items(messages, "Older details: expand an archive.") == [
        {"role": "system", "content": "Older details: expand an archive."},
        {"role": "user", "content": "[Session History Summary]\n..."},
    ]
    assert input_items(messages) == [messages[0]]


def test_every_kind_of_item_round_trips_exactly() -> None:
    stored = stored_messages(EVERY_KIND)
    back = [
        item
        for message in stored
        for item in restored_items(
            {k: v for k, v in message.items() if k != "metadata"}, message["metadata"]
        )
    ]
    assert back == EVERY_KIND


def test_what_the_chat_messages_hold() -> None:
    stored = stored_messages(
        [
            SYSTEM,
            DEVELOPER,
            USER_PARTS,
            REASONING,
            FUNCTION_CALL,
            FUNCTION_CALL_2,
            OUTPUT,
            ASSISTANT_OUTPUT,
        ]
    )
    chat = [{k: v for k, v in message.items() if k != "metadata"} for message in stored]
    assert chat == [
        {"role": "system", "content": "You book trips."},
        {"role": "system", "content": "Be terse."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Here is my ticket and a photo."},
                {
                    "type": "image_url",
                    "image_url": {"url": "https://example.com/seat.png", "detail": "low"},
                },
                {"type": "text", "text": "[input_image]"},
                {"type": "file", "file": {"file_id": "file_ticket", "filename": "ticket.pdf"}},
                {
                    "type": "file",
                    "file": {
                        "file_data": "data:application/pdf;base64,JVBERi0=",
                        "filename": "b.pdf",
                    },
                },
            ],
        },
        # The reasoning item rides with the calls that follow it; consecutive calls are one
        # assistant message, as a chat model sends them.
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "seat_map", "arguments": '{"flight": "UA123"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Lisboa"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": OUTPUT["output"]},
        {"role": "assistant", "content": ASSISTANT_OUTPUT["content"][0]["text"]},
    ]
    assert [len(message["metadata"][ITEMS_KEY]) for message in stored] == [1, 1, 1, 3, 1, 1]
    # A text the chat message holds is not stored twice.
    assert stored[5]["metadata"][ITEMS_KEY][0]["content"][0]["text"] == MOVED
    assert stored[3]["metadata"][ITEMS_KEY][1]["arguments"] == MOVED


@pytest.mark.parametrize(
    ("items", "carrier"),
    [
        ([REASONING], {"role": "assistant", "content": ""}),
        ([WEB_SEARCH, REASONING], {"role": "assistant", "content": ""}),
    ],
)
def test_items_without_a_chat_form_alone_get_an_empty_assistant_message(
    items: list[Any], carrier: dict[str, Any]
) -> None:
    [stored] = stored_messages(items)
    assert {k: v for k, v in stored.items() if k != "metadata"} == carrier
    assert restored_items(carrier, stored["metadata"]) == items


def test_trailing_items_ride_with_the_last_message() -> None:
    stored = stored_messages([USER_TEXT, REASONING])
    assert len(stored) == 1
    assert stored[0]["metadata"][ITEMS_KEY][1] == REASONING


def test_messages_stored_by_others_come_back_by_their_chat_form() -> None:
    assert restored_items({"role": "user", "content": "hi"}, None) == [
        {"role": "user", "content": "hi"}
    ]
    assert restored_items({"role": "user", "content": "hi"}, {"source": "mcp"}) == [
        {"role": "user", "content": "hi"}
    ]
