"""Prompt texts, message rendering and batching (DESIGN 4.2), and the message view they use."""

from __future__ import annotations

from typing import Any

import pytest

from app.wm.messages import (
    MessageView,
    ToolCallView,
    arguments_summary,
    content_text,
    read_messages,
)
from app.wm.prompts import (
    BATCH_TOKEN_BUDGET,
    CREATE_SYSTEM_PROMPT,
    MESSAGE_CHAR_LIMIT,
    PROMPT_VERSION,
    UPDATE_SYSTEM_PROMPT,
    batch_messages,
    create_prompt,
    cut_text,
    render_message,
    render_messages,
    update_prompt,
)
from app.wm.sections import SECTIONS
from tests.wm.helpers import words

CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "open", "arguments": '{"path": "app/main.py", "line": 3}'},
        }
    ],
}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "1: import os"}


def test_read_messages_resolves_tool_names_and_speakers() -> None:
    views = read_messages(
        [
            {"role": "system", "content": "rules"},
            {"role": "user", "name": "Caroline", "content": "hi"},
            CALL,
            RESULT,
            {"role": "tool", "tool_call_id": "unknown", "content": "?"},
            {"role": "tool", "name": "named", "content": "!"},
            {"role": "robot", "content": [{"type": "text", "text": "odd role"}]},
            "not a message",
            {
                "role": "assistant",
                "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}],
            },
        ]
    )
    assert [(v.position, v.role, v.speaker) for v in views] == [
        (0, "system", "system"),
        (1, "user", "Caroline"),
        (2, "assistant", "assistant"),
        (3, "tool", "tool"),
        (4, "tool", "tool"),
        (5, "tool", "tool"),
        (6, "user", "user"),
        (8, "assistant", "assistant"),
    ]
    assert views[2].tool_calls == (
        ToolCallView("c1", "open", '{"path": "app/main.py", "line": 3}'),
    )
    assert [v.tool_name for v in views[3:6]] == ["open", "tool", "named"]
    assert views[3].tool_call_id == "c1"
    assert views[6].text == "odd role"
    assert views[7].tool_calls == (ToolCallView("", "f", '{"a": 1}'),)


@pytest.mark.parametrize(
    ("calls", "read"),
    [
        ("not a list", ()),
        (["not a call", {"function": "no"}], ()),
        ([{"id": 3, "function": {"name": None, "arguments": None}}], (ToolCallView("", "", ""),)),
    ],
)
def test_malformed_tool_calls_read_as_empty(calls: object, read: tuple[ToolCallView, ...]) -> None:
    assert read_messages([{"role": "assistant", "tool_calls": calls}])[0].tool_calls == read


@pytest.mark.parametrize(
    ("content", "text"),
    [("plain", "plain"), ([{"text": "a"}, {"text": 1}, "b", {"text": "c"}], "a\nc"), (None, "")],
)
def test_content_text(content: object, text: str) -> None:
    assert content_text(content) == text


@pytest.mark.parametrize(
    ("arguments", "summary"),
    [
        ('{"path": "a.py", "line": 3, "flags": ["x"]}', 'path=a.py, line=3, flags=["x"]'),
        ("not json", "not json"),
        ('["a", 1]', '["a", 1]'),
        ("  spaced\n  out  ", "spaced out"),
        ('{"text": "' + "x" * 400 + '"}', "text=" + "x" * 294 + "…"),
    ],
)
def test_arguments_summary(arguments: str, summary: str) -> None:
    assert arguments_summary(arguments) == summary


@pytest.mark.parametrize(
    ("message", "rendered"),
    [
        ({"role": "user", "content": " Hello "}, "[user]: Hello"),
        ({"role": "user", "name": "Mel", "content": "Hi"}, "[Mel]: Hi"),
        ({"role": "assistant", "content": ""}, ""),
        (
            {**CALL, "content": "Opening it."},
            "[assistant]: Opening it.\n[tool:open] path=app/main.py, line=3",
        ),
        (CALL, "[tool:open] path=app/main.py, line=3"),
        ({"role": "tool", "name": "open", "content": "ok"}, "[tool result:open] ok"),
    ],
)
def test_render_message(message: dict[str, Any], rendered: str) -> None:
    assert render_message(read_messages([message])[0]) == rendered


def test_tool_results_are_named_by_their_call() -> None:
    assert render_messages([CALL, RESULT]) == (
        "[tool:open] path=app/main.py, line=3\n\n[tool result:open] 1: import os"
    )


@pytest.mark.parametrize(
    ("length", "limit", "cut"),
    [(2000, 2000, False), (2001, 2000, True), (10, 5, True)],
)
def test_long_messages_keep_head_and_tail(length: int, limit: int, cut: bool) -> None:
    text = "".join(chr(ord("a") + index % 26) for index in range(length))
    result = cut_text(text, limit)
    if not cut:
        assert result == text
        return
    head, marker, tail = result.split("\n")
    assert text.startswith(head)
    assert text.endswith(tail)
    assert len(head) + len(tail) == limit
    assert len(tail) >= limit // 3
    assert marker == f"[... {length - limit} characters cut ...]"


def test_every_message_is_cut_to_about_two_thousand_characters() -> None:
    rendered = render_messages([{"role": "tool", "name": "log", "content": "x" * 10_000}])
    assert MESSAGE_CHAR_LIMIT < len(rendered) < MESSAGE_CHAR_LIMIT + 60
    assert "characters cut" in rendered


def conversation(count: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for index in range(count):
        messages.append({"role": "user", "content": f"question {index} " + "w " * 8})
        call = {
            "role": "assistant",
            "tool_calls": [{"id": f"c{index}", "function": {"name": "f", "arguments": "{}"}}],
        }
        messages += [call, {"role": "tool", "tool_call_id": f"c{index}", "content": "r " * 8}]
    return messages


def test_batches_stay_under_budget_and_keep_tool_groups_whole() -> None:
    messages = conversation(10)
    batches = batch_messages(messages, budget=60, counter=words)
    assert [m for batch in batches for m in batch] == messages
    assert len(batches) > 1
    for batch in batches:
        rendered = render_messages(batch)
        assert words(rendered) <= 60
        assert batch[0]["role"] != "tool"


def test_a_group_over_budget_is_split_and_every_batch_has_a_message() -> None:
    messages = conversation(1)
    batches = batch_messages(messages, budget=1, counter=words)
    assert batches == [[message] for message in messages]


def test_everything_fits_in_one_batch_by_default() -> None:
    messages = conversation(5)
    assert batch_messages(messages) == [messages]
    assert BATCH_TOKEN_BUDGET == 24_000
    assert batch_messages([]) == []


def test_the_update_prompt_carries_rules_prior_warnings_and_messages() -> None:
    prompt = update_prompt(
        "# Working Memory\n\n## Session Title\nT\n",
        [{"role": "user", "content": "Never use tabs"}],
        size_warnings="<section_size_warnings>\n- x\n</section_size_warnings>",
    )
    assert [message["role"] for message in prompt] == ["system", "user"]
    assert prompt[0]["content"] == UPDATE_SYSTEM_PROMPT
    user = prompt[1]["content"]
    assert "<working_memory>\n# Working Memory" in user
    assert "<section_size_warnings>" in user
    assert "[user]: Never use tabs" in user
    assert all(section.value in user for section in SECTIONS)
    assert "<section_size_warnings>" not in update_prompt("", [])[1]["content"]


@pytest.mark.parametrize(
    "rule",
    [
        "Refresh Current State first",
        "exactly as they appear",
        "Task & Goals",
        "never invent details",
        "[resolved]",
        "consolidate it with UPDATE",
        "use KEEP",
        "2000 tokens per section",
        "12000 tokens",
        "update_working_memory",
        "(#12, #15)",
        "cite the user's message",
        "Pinned facts",
    ],
)
def test_the_update_rules_are_all_stated(rule: str) -> None:
    assert rule in UPDATE_SYSTEM_PROMPT
    if rule != "update_working_memory":
        assert rule in CREATE_SYSTEM_PROMPT


def test_both_prompts_number_the_messages_and_carry_the_pins() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Never use tabs"},
        {"role": "assistant", "content": None, "tool_calls": CALL["tool_calls"]},
        RESULT,
    ]
    pins = ["Deploys need two approvals", "#3 (user): the exact words"]
    for prompt in (
        update_prompt("# Working Memory", messages, first_seq=41, pins=pins),
        create_prompt(messages, first_seq=41, pins=pins),
    ):
        user = prompt[1]["content"]
        assert "#41 [user]: Never use tabs" in user
        assert "#42 [tool:open] path=app/main.py, line=3" in user
        assert "#43 [tool result:open] 1: import os" in user
        assert (
            "<pinned_facts>\n- Deploys need two approvals\n- #3 (user): the exact words\n"
            "</pinned_facts>" in user
        )
        assert user.index("<pinned_facts>") < user.index("<archived_messages>")
    assert "<pinned_facts>" not in update_prompt("", messages)[1]["content"]
    assert render_messages(messages) == render_messages(messages, first_seq=None)
    assert "#" not in render_messages(messages[:1])


def test_the_create_prompt_carries_existing_notes_and_messages() -> None:
    prompt = create_prompt([{"role": "user", "content": "hi"}], context="Legacy overview text")
    assert prompt[0]["content"] == CREATE_SYSTEM_PROMPT
    assert "create_working_memory" in CREATE_SYSTEM_PROMPT
    assert "# Working Memory" in CREATE_SYSTEM_PROMPT
    assert "<existing_notes>\nLegacy overview text\n</existing_notes>" in prompt[1]["content"]
    assert "[user]: hi" in prompt[1]["content"]
    assert "existing_notes" not in create_prompt([], context="  ")[1]["content"]


def test_the_prompt_version_is_a_stable_string() -> None:
    assert PROMPT_VERSION == "wm-prompt-2026-12-v2"


def test_chat_message_defaults() -> None:
    view = MessageView(position=0, role="user", text="x", speaker="user")
    assert (view.tool_calls, view.tool_name, view.tool_call_id) == ((), "", "")
