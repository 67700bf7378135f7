"""Chat messages and Agents SDK input items, both ways: every role, tool groups, content parts."""

from __future__ import annotations

from typing import Any

import pytest

from app.agents.items import input_items, message_items, stored_messages

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


CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": "Checking.", "tool_calls": [CALL, CALL_2]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sun"},
    {"role": "tool", "tool_call_id": "call_2", "content": "rain"},
    {"role": "assistant", "content": "Mixed."},
]


def test_messages_survive_the_round_trip() -> None:
    items = [item for message in CONVERSATION for item in message_items(message)]
    stored = stored_messages(items)
    # An assistant's text comes back as a message of its own, before its tool calls: the same
    # conversation to a chat model, and a fixed point of the round trip from then on.
    assert stored == [
        CONVERSATION[0],
        {"role": "assistant", "content": "Checking."},
        {"role": "assistant", "content": None, "tool_calls": [CALL, CALL_2]},
        *CONVERSATION[2:],
    ]
    again = [item for message in stored for item in message_items(message)]
    assert again == items
    assert stored_messages(again) == stored


def test_output_items_of_a_run_are_stored_as_chat_messages() -> None:
    produced = [
        {"role": "user", "content": "hi"},
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hello", "annotations": []}],
        },
        # A reasoning item has no chat form: it is left out.
        {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}]},
    ]
    assert stored_messages(produced) == [  # type: ignore[arg-type]
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
