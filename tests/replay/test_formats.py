"""Conversation files: each format read, told apart by content, and refused with a reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.replay.formats import (
    Conversation,
    ReplayFormat,
    UnreadableConversation,
    chain,
    detect_format,
    read_conversations,
)

OPENAI = [
    {"role": "user", "content": "Fix app/main.py"},
    {"role": "assistant", "content": "Done."},
]
LOCOMO = {
    "speaker_a": "Caroline Smith",
    "speaker_b": "Mel",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Caroline Smith", "dia_id": "D1:1", "text": "Hi Mel!"},
        {"speaker": "Mel", "dia_id": "D1:2", "text": "Look", "blip_caption": "a sunset"},
    ],
    "session_2_date_time": "9 May, 2023",
    "session_2": [],
    "qa": [{"question": "Who?", "answer": "Mel", "evidence": ["D1:2"], "category": 1}],
}
SWE = {
    "history": [
        {"role": "system", "content": "You are a coder."},
        {"role": "user", "content": "Fix the bug.", "is_demo": True},
        {"role": "user", "content": "Fix the issue."},
        {"role": "assistant", "content": "x", "thought": "Look first.", "action": "open a.py"},
        {"role": "user", "content": "[File: a.py]"},
        {"role": "assistant", "content": "I give up."},
    ],
    "info": {"submission": "diff --git a/a.py b/a.py\n+++ b/a.py\n+x = 1\n", "exit_status": "ok"},
}
TAU: list[dict[str, Any]] = [
    {
        "task_id": 3,
        "trial": 1,
        "reward": 1,
        "traj": [{"role": "system", "content": "policy"}, {"role": "user", "content": "hi"}],
        "info": {"task": {"actions": [{"name": "book", "kwargs": {"id": "X1"}}]}},
    }
]


def written(tmp_path: Path, name: str, data: Any, *, lines: bool = False) -> Path:
    path = tmp_path / name
    if lines:
        path.write_text("\n".join(json.dumps(item) for item in data) + "\n")
    else:
        path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("data", "found"),
    [
        (OPENAI, ReplayFormat.OPENAI),
        ({"messages": OPENAI}, ReplayFormat.OPENAI),
        ([{"messages": OPENAI}], ReplayFormat.OPENAI),
        (LOCOMO, ReplayFormat.LOCOMO),
        ([{"sample_id": "conv-1", "conversation": LOCOMO, "qa": []}], ReplayFormat.LOCOMO),
        (SWE, ReplayFormat.SWE_AGENT),
        (TAU, ReplayFormat.TAU_BENCH),
        ({"speaker_a": "x"}, None),
        ({"other": 1}, None),
        ([], None),
        ([1, 2], None),
        ([{"content": "no role"}], None),
        ("text", None),
    ],
)
def test_detect_format(data: Any, found: ReplayFormat | None) -> None:
    assert detect_format(data) is found


def test_openai_files(tmp_path: Path) -> None:
    (plain,) = read_conversations(written(tmp_path, "chat.json", OPENAI))
    assert plain == Conversation("chat", ReplayFormat.OPENAI, OPENAI)
    (wrapped,) = read_conversations(written(tmp_path, "w.json", {"messages": OPENAI}))
    assert wrapped.messages == OPENAI
    (lines,) = read_conversations(written(tmp_path, "l.jsonl", OPENAI, lines=True))
    assert lines.messages == OPENAI
    records = [{"id": "a", "messages": OPENAI}, {"messages": OPENAI[:1]}]
    many = read_conversations(written(tmp_path, "many.jsonl", records, lines=True))
    assert [(c.name, len(c.messages)) for c in many] == [("a", 2), ("many-2", 1)]


def test_locomo_speakers_dates_photos_and_reference(tmp_path: Path) -> None:
    (conversation,) = read_conversations(written(tmp_path, "26.json", LOCOMO))
    assert conversation.name == "locomo-26"
    assert conversation.messages == [
        {"role": "system", "content": "Session 1 began at 1:56 pm on 8 May, 2023."},
        {"role": "user", "name": "Caroline_Smith", "content": "Hi Mel!"},
        {"role": "assistant", "name": "Mel", "content": "Look [shares a photo: a sunset]"},
    ]
    assert conversation.reference["turns"]["D1:2"] == "Look [shares a photo: a sunset]"
    assert conversation.reference["speakers"] == ["Caroline Smith", "Mel"]
    assert conversation.reference["qa"] == LOCOMO["qa"]


def test_swe_agent_actions_become_tool_calls(tmp_path: Path) -> None:
    (conversation,) = read_conversations(written(tmp_path, "run.traj", SWE))
    roles = [(m["role"], m.get("tool_calls") is not None) for m in conversation.messages]
    assert roles == [
        ("system", False),
        ("system", False),  # the demonstration
        ("user", False),
        ("assistant", True),
        ("tool", False),
        ("assistant", False),
    ]
    call = conversation.messages[3]
    assert call["content"] == "Look first."
    assert call["tool_calls"][0]["function"] == {
        "name": "open",
        "arguments": json.dumps({"command": "open a.py"}),
    }
    assert conversation.messages[4]["tool_call_id"] == call["tool_calls"][0]["id"]
    assert conversation.reference["submission"].startswith("diff --git")


def test_tau_bench_runs_and_chains(tmp_path: Path) -> None:
    (run,) = read_conversations(written(tmp_path, "runs.json", TAU))
    assert run.name == "tau-task3-trial1"
    assert run.reference["actions"] == TAU[0]["info"]["task"]["actions"]
    long = chain("shift", [run, run])
    assert [m["role"] for m in long.messages] == ["system", "user", "user"]
    assert len(long.reference["actions"]) == 2
    assert chain("empty", []).messages == []


@pytest.mark.parametrize(
    ("content", "fmt", "reason"),
    [
        ("not json\n", None, "line 1 is not JSON"),
        ('{"other": 1}', None, "not a known conversation format"),
        ("[]", ReplayFormat.OPENAI, "holds no messages"),
        ('{"session_1": [{"text": "hi"}]}', ReplayFormat.LOCOMO, "not a valid locomo file"),
        ('{"speaker_a": "a"}', ReplayFormat.LOCOMO, "holds no messages"),
        ("[1]", ReplayFormat.TAU_BENCH, "not a valid tau-bench file"),
    ],
)
def test_unreadable_files_say_why(
    tmp_path: Path, content: str, fmt: ReplayFormat | None, reason: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(UnreadableConversation, match=reason):
        read_conversations(path, fmt)


def test_a_missing_or_binary_file_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(UnreadableConversation, match="cannot be read"):
        read_conversations(tmp_path / "missing.json")
    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UnreadableConversation, match="cannot be read"):
        read_conversations(binary)
