"""One ``messages.jsonl`` line → OpenAI messages: every part type, both tool placements, the
odd content real workspaces hold, and lines that are not messages (pure, no database)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from app.importer.openviking.parts import (
    Converted,
    InvalidLine,
    ToolCallIds,
    convert_line,
    parse_time,
)
from app.importer.openviking.records import ProblemKind
from tests.support.fake_openai import check_chat_request

WHEN = "2026-11-29T12:56:44.832075+00:00"
LIMIT = 1024 * 1024


def line(role: str, *parts: object, **extra: Any) -> dict[str, Any]:
    return {"id": "msg_1", "role": role, "parts": list(parts), "created_at": WHEN, **extra}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool(tool_id: str = "call_1", **extra: Any) -> dict[str, Any]:
    return {
        "type": "tool",
        "tool_id": tool_id,
        "tool_name": "search",
        "tool_uri": "",
        "skill_uri": "",
        "tool_status": "completed",
        "tool_input": {"q": "flights"},
        "tool_output": "[]",
        **extra,
    }


def no_file(part: Mapping[str, Any]) -> tuple[str | None, str]:
    return None, "no such file"


def convert(
    raw: object, ids: ToolCallIds | None = None, *, limit: int = LIMIT, full: Any = no_file
) -> Converted:
    return convert_line(
        raw, ids=ids or ToolCallIds(), full_output=full, fallback_time=None, max_message_bytes=limit
    )


def sent(converted: Converted) -> list[dict[str, Any]]:
    return [message.openai_message() for message in converted.messages]


def metadata(converted: Converted, index: int) -> dict[str, Any]:
    found = converted.messages[index].metadata
    assert found is not None
    result: dict[str, Any] = found["openviking"]
    return result


CONVERSIONS: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = [
    ("one text part", line("user", text("hi")), [{"role": "user", "content": "hi"}]),
    (
        "two text parts stay two parts",
        line("assistant", text("a"), text("b")),
        [{"role": "assistant", "content": [text("a"), text("b")]}],
    ),
    (
        "an image in a user message stays an image",
        line("user", text("look"), {"type": "image_url", "image_url": {"url": "https://x/p.jpg"}}),
        [
            {
                "role": "user",
                "content": [
                    text("look"),
                    {"type": "image_url", "image_url": {"url": "https://x/p.jpg"}},
                ],
            }
        ],
    ),
    (
        "an image in an assistant message becomes its link",
        line(
            "assistant",
            {"type": "image_url", "image_url": {"url": "https://x/p.jpg", "detail": "high"}},
        ),
        [{"role": "assistant", "content": "[image: https://x/p.jpg]"}],
    ),
    (
        "an unknown image detail is dropped",
        line("user", {"type": "image_url", "image_url": {"url": "u", "detail": "ultra"}}),
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}],
    ),
    (
        "a context part is text with its abstract",
        line(
            "user",
            {
                "type": "context",
                "uri": "viking://m/1",
                "context_type": "memory",
                "abstract": "Tea.",
            },
        ),
        [{"role": "user", "content": "[memory context: viking://m/1] Tea."}],
    ),
    (
        "a context part without abstract keeps its reference",
        line("user", {"type": "context", "uri": "viking://r/2", "context_type": "resource"}),
        [{"role": "user", "content": "[resource context: viking://r/2]"}],
    ),
    (
        "a tool part in an assistant message joins its text",
        line("assistant", text("Searching."), tool()),
        [
            {
                "role": "assistant",
                "content": "Searching.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"q": "flights"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "[]"},
        ],
    ),
    (
        "a tool-transport user message becomes a call and its result",
        line("user", tool("step-1"), message_kind="tool_transport"),
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "step-1",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"q": "flights"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "step-1", "content": "[]"},
        ],
    ),
    (
        # One assistant message, as the API stores it; the part layout keeps the order.
        "text after a tool part joins its call",
        line("assistant", tool(), text("Found none.")),
        [
            {
                "role": "assistant",
                "content": "Found none.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"q": "flights"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "[]"},
        ],
    ),
    (
        "user text before a tool part stays the user's",
        line("user", text("Here is the output:"), tool("t9")),
        [
            {"role": "user", "content": "Here is the output:"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "t9",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"q": "flights"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "t9", "content": "[]"},
        ],
    ),
    (
        "no parts is an empty message",
        line("assistant"),
        [{"role": "assistant", "content": ""}],
    ),
    (
        "a system message keeps its text",
        line("system", text("Be brief."), text("Be kind.")),
        [{"role": "system", "content": [text("Be brief."), text("Be kind.")]}],
    ),
]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(raw, expected) for _, raw, expected in CONVERSIONS],
    ids=[name for name, _, _ in CONVERSIONS],
)
def test_conversions(raw: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    converted = convert(raw)
    assert sent(converted) == expected
    assert converted.problems == ()
    assert all(metadata(converted, i)["message_id"] == "msg_1" for i in range(len(expected)))


TOOL_SHAPES: list[tuple[str, dict[str, Any], str, str]] = [
    ("an object input is JSON", {"tool_input": {"a": "é"}}, '{"a": "é"}', "[]"),
    (
        "a string input is kept under arguments",
        {"tool_input": "{'a': 1}"},
        '{"arguments": "{\'a\': 1}"}',
        "[]",
    ),
    ("no input is an empty object", {"tool_input": None}, "{}", "[]"),
    ("a list input is kept under arguments", {"tool_input": [1, 2]}, '{"arguments": [1, 2]}', "[]"),
    ("no output is an empty result", {"tool_output": None}, '{"q": "flights"}', ""),
    (
        "a structured output is JSON",
        {"tool_output": {"ok": True}},
        '{"q": "flights"}',
        '{"ok": true}',
    ),
]


@pytest.mark.parametrize(
    ("changes", "arguments", "output"),
    [(changes, arguments, output) for _, changes, arguments, output in TOOL_SHAPES],
    ids=[name for name, *_ in TOOL_SHAPES],
)
def test_tool_inputs_and_outputs(changes: dict[str, Any], arguments: str, output: str) -> None:
    part = {key: value for key, value in tool(**changes).items() if value is not None}
    call, result = sent(convert(line("assistant", part)))
    assert call["tool_calls"][0]["function"]["arguments"] == arguments
    assert result["content"] == output


def test_tool_status_and_bookkeeping_are_kept_in_metadata() -> None:
    part = tool(tool_status="error", tool_output="Error: no seats", tool_output_group_id="msg_1")
    converted = convert(line("user", part, peer_id="p1", turn_id="turn-1"))
    meta = metadata(converted, 0)
    [layout] = meta["parts"]
    assert layout["tool_status"] == "error"
    assert layout["tool_id"] == "call_1"
    assert layout["tool_output_group_id"] == "msg_1"
    assert meta["role"] == "user"
    assert "tool_input" not in layout
    assert "tool_output" not in layout
    for index in (0, 1):
        assert metadata(converted, index)["peer_id"] == "p1"
        assert metadata(converted, index)["turn_id"] == "turn-1"


def test_repeated_and_missing_tool_ids_become_unique_per_session() -> None:
    ids = ToolCallIds()
    first = sent(convert(line("assistant", tool("dup"), tool("dup")), ids))
    second = sent(convert(line("assistant", tool("dup"), tool("")), ids))
    assert [c["id"] for c in first[0]["tool_calls"]] == ["dup", "dup_2"]
    assert [c["id"] for c in second[0]["tool_calls"]] == ["dup_3", "call_1"]
    # Every result answers its own call, so a strict chat server accepts the whole list.
    check_chat_request(
        {"model": "m", "messages": [{"role": "user", "content": "go"}, *first, *second]}
    )


def test_externalized_output_is_restored_from_its_file() -> None:
    part = tool(
        tool_output="[preview]", tool_output_ref="viking://user/a/sessions/s/tool-results/tr_1"
    )
    restored = convert(line("assistant", part), full=lambda part: ("full output", ""))
    assert sent(restored)[1]["content"] == "full output"
    assert metadata(restored, 0)["parts"][0]["tool_output_restored"] is True
    missing = convert(line("assistant", part))
    assert sent(missing)[1]["content"] == "[preview]"
    assert metadata(missing, 0)["parts"][0]["tool_output_restored"] is False
    assert [kind for kind, _ in missing.problems] == [ProblemKind.TOOL_OUTPUT_MISSING]


PROBLEMS: list[tuple[str, dict[str, Any], ProblemKind]] = [
    (
        "unknown part type",
        line("user", text("a"), {"type": "hologram", "data": 1}),
        ProblemKind.UNKNOWN_PART,
    ),
    ("part that is not an object", line("user", text("a"), "stray"), ProblemKind.UNKNOWN_PART),
    ("text part without text", line("user", text("a"), {"type": "text"}), ProblemKind.INVALID_PART),
    (
        "image without url",
        line("user", text("a"), {"type": "image_url", "image_url": {}}),
        ProblemKind.INVALID_PART,
    ),
    (
        "tool without name",
        line("assistant", text("a"), tool(tool_name="")),
        ProblemKind.INVALID_PART,
    ),
    ("NUL in text", line("user", text("a\x00b")), ProblemKind.UNSTORABLE_TEXT),
    ("lone surrogate in text", line("user", text("a\ud800b")), ProblemKind.UNSTORABLE_TEXT),
    (
        "no created_at",
        {"id": "msg_1", "role": "user", "parts": [text("a")]},
        ProblemKind.INVALID_TIME,
    ),
    (
        "unreadable created_at",
        line("user", text("a"), created_at="yesterday"),
        ProblemKind.INVALID_TIME,
    ),
]


@pytest.mark.parametrize(
    ("raw", "kind"), [(raw, kind) for _, raw, kind in PROBLEMS], ids=[n for n, *_ in PROBLEMS]
)
def test_what_is_repaired_or_kept_aside_is_reported(raw: dict[str, Any], kind: ProblemKind) -> None:
    converted = convert(raw)
    assert [found for found, _ in converted.problems] == [kind]
    messages = sent(converted)
    assert messages, "the rest of the message is kept"
    assert "\x00" not in json.dumps(messages)
    first = messages[0]
    assert first["content"] == "a" or first.get("tool_calls") or "\ufffd" in first["content"]


def test_unknown_parts_ride_along_in_metadata() -> None:
    odd = {"type": "hologram", "data": 1}
    converted = convert(line("user", text("a"), odd))
    assert metadata(converted, 0)["unconverted_parts"] == [odd]


NOT_MESSAGES: list[tuple[str, object]] = [
    ("a list", [1, 2]),
    ("no id", {"role": "user", "parts": []}),
    ("an empty id", {"id": "", "role": "user", "parts": []}),
    ("a tool role", {"id": "m", "role": "tool", "parts": []}),
    ("parts not a list", {"id": "m", "role": "user", "parts": "hi"}),
]


@pytest.mark.parametrize("raw", [raw for _, raw in NOT_MESSAGES], ids=[n for n, _ in NOT_MESSAGES])
def test_lines_that_are_not_messages_are_refused(raw: object) -> None:
    with pytest.raises(InvalidLine) as refused:
        convert(raw)
    assert refused.value.kind is ProblemKind.INVALID_MESSAGE


@pytest.mark.parametrize(
    ("slack", "too_large"), [(-1, True), (0, False), (1, False)], ids=["below", "at", "above"]
)
def test_a_message_above_the_size_limit_is_fatal(slack: int, too_large: bool) -> None:
    """The limit is the service's: the JSON bytes of the message as stored."""
    size = len(json.dumps({"role": "user", "content": "x" * 150}).encode())
    converted = convert(line("user", text("x" * 150)), limit=size + slack)
    kinds = [kind for kind, _ in converted.problems]
    assert kinds == ([ProblemKind.MESSAGE_TOO_LARGE] if too_large else [])


TIMES = [
    ("2026-11-29T12:56:44.832075+00:00", datetime(2026, 11, 29, 12, 56, 44, 832075, UTC)),
    ("2023-05-08T14:00:00Z", datetime(2023, 5, 8, 14, 0, tzinfo=UTC)),
    ("2026-11-29T12:56:42.117Z", datetime(2026, 11, 29, 12, 56, 42, 117000, UTC)),
    ("", None),
    ("not a time", None),
    (None, None),
]


@pytest.mark.parametrize(("value", "expected"), TIMES)
def test_both_timestamp_styles_parse(value: object, expected: datetime | None) -> None:
    assert parse_time(value) == expected


def test_a_message_without_time_takes_the_fallback() -> None:
    earlier = datetime(2026, 1, 1, tzinfo=UTC)
    converted = convert_line(
        {"id": "m", "role": "user", "parts": [text("a")]},
        ids=ToolCallIds(),
        full_output=no_file,
        fallback_time=earlier,
        max_message_bytes=LIMIT,
    )
    assert converted.messages[0].created_at == earlier
