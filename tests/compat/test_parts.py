"""OpenViking's parts format to OpenAI messages and back: each part kind, each role, tool parts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from app.compat.openviking.parts import MessageIn, to_openai, to_parts
from app.sessions.records import StoredMessage
from app.sessions.schemas import MessageCreate

AT = datetime(2026, 11, 29, 12, 56, 44, tzinfo=UTC)
TOOL = {
    "type": "tool",
    "tool_id": "call_1",
    "tool_name": "search_direct_flight",
    "tool_uri": "",
    "skill_uri": "",
    "tool_input": {"origin": "JFK", "destination": "SEA"},
    "tool_output": '[{"flight_number": "HAT069"}]',
    "tool_status": "completed",
}


def stored(raw: dict[str, Any]) -> list[StoredMessage]:
    """What the service stores for one message: each OpenAI message validated as ``/v1`` does,
    numbered from 1."""
    rows = []
    for seq, message in enumerate(to_openai(MessageIn.model_validate(raw)), start=1):
        create = MessageCreate.model_validate(message)
        rows.append(
            StoredMessage(
                seq=seq,
                role=create.stored_role,
                turn=1,
                message=create.openai_message(),
                token_count=1,
                metadata=create.metadata,
                created_at=create.created_at or AT,
            )
        )
    return rows


def plain(rows: list[StoredMessage]) -> list[dict[str, Any]]:
    return [dict(row.message) for row in rows]


def test_content_is_one_text_message() -> None:
    rows = stored({"role": "user", "content": "How do I authenticate users?"})
    assert plain(rows) == [{"role": "user", "content": "How do I authenticate users?"}]
    assert rows[0].metadata is None
    assert to_parts(rows) == [
        {
            "id": "msg_" + "0" * 31 + "1",
            "role": "user",
            "parts": [{"type": "text", "text": "How do I authenticate users?"}],
            "created_at": AT.isoformat(),
        }
    ]


def test_parts_win_over_content() -> None:
    rows = stored({"role": "user", "content": "ignored", "parts": [{"type": "text", "text": "x"}]})
    assert plain(rows) == [{"role": "user", "content": "x"}]


def test_empty_parts_fall_back_to_content() -> None:
    rows = stored({"role": "assistant", "content": "hi", "parts": []})
    assert plain(rows) == [{"role": "assistant", "content": "hi"}]


@pytest.mark.parametrize(
    "raw",
    [
        {"role": "user"},
        {"role": "user", "parts": []},
        {"role": "system", "content": "x"},
        {"role": "tool", "content": "x"},
        {"role": "user", "parts": [{"type": "audio", "data": "x"}]},
        {"role": "user", "parts": [{"type": "image_url", "image_url": {"url": ""}}]},
        {
            "role": "user",
            "parts": [{"type": "image_url", "image_url": {"url": "u", "detail": "x"}}],
        },
        {"role": "user", "parts": [{"type": "context", "context_type": "file"}]},
        {"role": "user", "parts": [{"type": "tool", "tool_input": "not an object"}]},
        {"role": "user", "content": "x", "created_at": "yesterday"},
        {"role": "user", "content": "x", "message_kind": "chit_chat"},
    ],
)
def test_refused_messages(raw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        MessageIn.model_validate(raw)


def test_text_image_and_context_parts_are_the_content_of_a_user_message() -> None:
    context = {
        "type": "context",
        "uri": "viking://resources/docs/auth/",
        "context_type": "resource",
        "abstract": "Auth guide",
    }
    image = {
        "type": "image_url",
        "image_url": {"url": "https://example.com/a.png", "detail": "low"},
    }
    parts = [{"type": "text", "text": "Look:"}, image, context]
    rows = stored({"role": "user", "parts": parts})
    assert plain(rows) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look:"},
                image,
                {
                    "type": "text",
                    "text": "[resource context: viking://resources/docs/auth/] Auth guide",
                },
            ],
        }
    ]
    assert to_parts(rows)[0]["parts"] == parts


def test_an_assistant_image_is_sent_as_text_and_read_back_as_the_image() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/b.png"}}
    rows = stored({"role": "assistant", "parts": [image]})
    assert plain(rows) == [{"role": "assistant", "content": "[image: https://example.com/b.png]"}]
    assert to_parts(rows)[0]["parts"] == [image]


def test_an_assistant_tool_part_is_a_call_and_its_result() -> None:
    rows = stored({"role": "assistant", "parts": [{"type": "text", "text": "Searching"}, TOOL]})
    assert plain(rows) == [
        {
            "role": "assistant",
            "content": "Searching",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "search_direct_flight",
                        "arguments": '{"origin": "JFK", "destination": "SEA"}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '[{"flight_number": "HAT069"}]'},
    ]
    [message] = to_parts(rows)
    assert message["role"] == "assistant"
    assert message["parts"] == [{"type": "text", "text": "Searching"}, TOOL]


def test_part_order_and_tool_extras_come_back() -> None:
    tool = {**TOOL, "duration_ms": 12.5, "tool_output_truncated": True}
    rows = stored({"role": "assistant", "parts": [tool, {"type": "text", "text": "Found one."}]})
    assert to_parts(rows)[0]["parts"] == [tool, {"type": "text", "text": "Found one."}]


def test_a_tool_part_without_input_or_output() -> None:
    pending = {"type": "tool", "tool_id": "c9", "tool_name": "deploy", "tool_status": "pending"}
    rows = stored({"role": "assistant", "parts": [pending]})
    assert plain(rows)[0]["content"] is None
    assert plain(rows)[0]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert plain(rows)[1] == {"role": "tool", "tool_call_id": "c9", "content": ""}
    [part] = to_parts(rows)[0]["parts"]
    assert part == {
        **pending,
        "tool_uri": "",
        "skill_uri": "",
        "tool_input": None,
        "tool_output": "",
    }


def test_empty_and_repeated_tool_ids_get_unique_call_ids_and_come_back_as_sent() -> None:
    parts = [
        {**TOOL, "tool_id": "", "tool_name": ""},
        {**TOOL, "tool_id": "dup"},
        {**TOOL, "tool_id": "dup"},
        {**TOOL, "tool_id": "call_0"},
    ]
    rows = stored({"role": "assistant", "parts": parts})
    calls = plain(rows)[0]["tool_calls"]
    assert [call["id"] for call in calls] == ["call_0", "dup", "dup_2", "call_0_2"]
    assert calls[0]["function"]["name"] == "tool"
    assert [row.message["tool_call_id"] for row in rows[1:]] == [
        "call_0",
        "dup",
        "dup_2",
        "call_0_2",
    ]
    assert to_parts(rows)[0]["parts"] == parts


def test_a_users_tool_parts_become_an_assistant_call_after_the_users_text() -> None:
    raw = {
        "role": "user",
        "parts": [{"type": "text", "text": "Here is the output"}, TOOL],
        "message_kind": "tool_transport",
        "peer_id": "caroline",
        "turn_id": "turn-1",
        "source_message_ids": ["msg_1"],
        "created_at": "2023-05-08T14:00:00Z",
    }
    rows = stored(raw)
    assert [row.role for row in rows] == ["user", "assistant", "tool"]
    labels = {
        "peer_id": "caroline",
        "turn_id": "turn-1",
        "message_kind": "tool_transport",
        "source_message_ids": ["msg_1"],
    }
    assert {row.created_at for row in rows} == {datetime(2023, 5, 8, 14, tzinfo=UTC)}
    read = to_parts(rows)
    assert [(m["role"], [p["type"] for p in m["parts"]]) for m in read] == [
        ("user", ["text"]),
        ("user", ["tool"]),
    ]
    assert read[1]["parts"] == [TOOL]
    assert [{key: m[key] for key in labels} for m in read] == [labels, labels]
    assert read[1]["id"] == "msg_" + "0" * 31 + "2"


def test_a_user_message_of_tool_parts_only_is_a_call_marked_as_the_users() -> None:
    rows = stored({"role": "user", "parts": [TOOL]})
    assert [row.role for row in rows] == ["assistant", "tool"]
    assert to_parts(rows) == [
        {
            "id": "msg_" + "0" * 31 + "1",
            "role": "user",
            "parts": [TOOL],
            "created_at": AT.isoformat(),
        }
    ]


def message(seq: int, raw: dict[str, Any]) -> StoredMessage:
    role = raw["role"]
    return StoredMessage(seq, role, 1, raw, 1, None, AT)


def test_messages_stored_through_v1_read_as_parts() -> None:
    rows = [
        message(1, {"role": "system", "content": "Be brief."}),
        message(
            2,
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": "https://example.com/c.png"}},
                    {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
                ],
            },
        ),
        message(
            3,
            {
                "role": "assistant",
                "content": [{"type": "refusal", "refusal": "I cannot say."}],
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "[1]"}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{bad"}},
                    {"id": "c", "type": "function", "function": {"name": "h", "arguments": "{}"}},
                ],
            },
        ),
        message(4, {"role": "tool", "tool_call_id": "a", "content": "one"}),
        message(5, {"role": "tool", "tool_call_id": "b", "content": "two"}),
        message(6, {"role": "tool", "tool_call_id": "z", "content": "stray"}),
    ]
    read = to_parts(rows)
    assert [(m["id"][-1], m["role"]) for m in read] == [
        ("1", "system"),
        ("2", "user"),
        ("3", "assistant"),
        ("6", "user"),
    ]
    assert read[0]["parts"] == [{"type": "text", "text": "Be brief."}]
    assert read[1]["parts"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/c.png"}},
        {"type": "text", "text": "[input_audio]"},
    ]
    text, first, second, third = read[2]["parts"]
    assert text == {"type": "text", "text": "I cannot say."}
    assert first["tool_input"] == {"arguments": [1]}
    assert (first["tool_output"], first["tool_status"]) == ("one", "completed")
    assert second["tool_input"] == {"arguments": "{bad"}
    assert (second["tool_output"], second["tool_status"]) == ("two", "completed")
    assert (third["tool_output"], third["tool_status"]) == ("", "pending")


def test_a_tool_result_without_its_call_reads_as_a_users_tool_part() -> None:
    read = to_parts([message(7, {"role": "tool", "tool_call_id": "x", "content": "late"})])
    assert read[0]["role"] == "user"
    assert read[0]["parts"] == [
        {
            "type": "tool",
            "tool_id": "x",
            "tool_name": "",
            "tool_status": "completed",
            "tool_output": "late",
        }
    ]
