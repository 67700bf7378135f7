"""Loaders that read the shared evaluation datasets as OpenAI-format message lists.

The datasets live beside the project (``../shared/datasets``) and are never copied into it; a
test that needs them is skipped, with the reason, when the folder is absent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

PROJECT_ROOT: Final = Path(__file__).resolve().parents[2]
DATASETS: Final = PROJECT_ROOT.parent / "shared" / "datasets"

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Conversation:
    name: str
    messages: list[Message]
    extra: dict[str, Any]


def require(folder: str) -> Path:
    path = DATASETS / folder
    if not path.is_dir():
        pytest.skip(f"dataset folder {path} is not present on this machine")
    return path


def swe_agent() -> list[Conversation]:
    """SWE-agent ``history``: actions become tool calls, observations their results."""
    conversations = []
    for path in sorted(require("swe-agent-trajectories").glob("*.traj")):
        data = json.loads(path.read_text(encoding="utf-8"))
        conversations.append(
            Conversation(path.stem, _swe_messages(data["history"]), {"info": data["info"]})
        )
    return conversations


def _swe_messages(history: list[dict[str, Any]]) -> list[Message]:
    messages: list[Message] = []
    pending: tuple[str, str] | None = None
    for index, entry in enumerate(history):
        role = entry["role"]
        content = entry.get("content") or ""
        if role == "system" or entry.get("is_demo"):
            # A demonstration is an example trajectory, not part of this task's conversation.
            messages.append({"role": "system", "content": content})
            continue
        if role == "assistant":
            action = str(entry.get("action") or "").strip()
            thought = str(entry.get("thought") or content)
            if action:
                call_id = f"call_{index}"
                name = action.split()[0]
                pending = (call_id, name)
                messages.append(
                    {
                        "role": "assistant",
                        "content": thought,
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {
                                    "name": name,
                                    "arguments": json.dumps({"command": action}),
                                },
                            }
                        ],
                    }
                )
            else:
                messages.append({"role": "assistant", "content": content})
            continue
        if pending is not None:
            call_id, name = pending
            messages.append(
                {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}
            )
            pending = None
        else:
            messages.append({"role": "user", "content": content})
    return messages


def tau_airline(limit: int | None = None) -> list[Conversation]:
    data = json.loads(
        (require("tau-bench-airline") / "gpt-4o-airline.json").read_text(encoding="utf-8")
    )
    runs = data if limit is None else data[:limit]
    return [
        Conversation(
            f"task{run['task_id']}-trial{run['trial']}",
            [dict(message) for message in run["traj"]],
            {"task": run["info"]["task"]},
        )
        for run in runs
    ]


def locomo() -> list[Conversation]:
    """LoCoMo: speaker A is the user, speaker B the assistant; each session opens with its date."""
    conversations = []
    for path in sorted((require("locomo") / "locomo10_v2").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        speaker_a = data["speaker_a"]
        messages: list[Message] = []
        numbers = sorted(
            int(match.group(1))
            for key in data
            if (match := re.fullmatch(r"session_(\d+)", key)) and data[key]
        )
        for number in numbers:
            when = data.get(f"session_{number}_date_time", "")
            messages.append({"role": "system", "content": f"Session {number} began at {when}."})
            for turn in data[f"session_{number}"]:
                role = "user" if turn["speaker"] == speaker_a else "assistant"
                messages.append({"role": role, "name": turn["speaker"], "content": turn["text"]})
        conversations.append(Conversation(path.stem, messages, {"qa": data["qa"]}))
    return conversations


def dialogsum(limit: int | None = None) -> list[Conversation]:
    path = require("dialogsum") / "dialogsum.dev.jsonl"
    conversations = []
    for line in path.read_text(encoding="utf-8").splitlines()[:limit]:
        record = json.loads(line)
        messages: list[Message] = []
        for turn in record["dialogue"].splitlines():
            match = re.match(r"#Person(\d)#:\s*(.*)", turn)
            if match is None:
                continue
            role = "user" if match.group(1) == "1" else "assistant"
            messages.append({"role": role, "content": match.group(2)})
        conversations.append(
            Conversation(record["fname"], messages, {"summary": record["summary"]})
        )
    return conversations
