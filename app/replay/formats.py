"""Conversation files as OpenAI-format message lists: OpenAI JSON/JSONL, LoCoMo, SWE-agent, τ-bench.

Owns reading each format and telling them apart (by content, never by file name alone), and the
``Conversation`` value every reader returns, with the format's own reference data (QA, gold
actions, the final diff) kept beside the messages. Never talks to the service.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

Message = dict[str, Any]


class ReplayFormat(StrEnum):
    OPENAI = "openai"
    """A JSON list of messages, ``{"messages": [...]}``, or JSON lines of either."""
    LOCOMO = "locomo"
    """A LoCoMo conversation (``speaker_a``, ``session_N``), or a list of them."""
    SWE_AGENT = "swe-agent"
    """A SWE-agent trajectory (``.traj``: ``history``, ``info``)."""
    TAU_BENCH = "tau-bench"
    """A τ-bench run list (``[{task_id, traj, info}]``): one conversation per run."""


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation: OpenAI-format messages in order, and the source's reference data.

    ``reference`` holds what the source knows about the conversation (LoCoMo's ``qa`` and its
    speakers, a τ-bench run's gold ``actions``, a SWE-agent run's ``submission``); the
    evaluation reads anchors from it.
    """

    name: str
    source: ReplayFormat
    messages: list[Message]
    reference: Mapping[str, Any] = field(default_factory=dict)


class UnreadableConversation(ValueError):
    """The file is not one of the formats, or not the one asked for; the message says why."""


def read_conversations(path: Path, fmt: ReplayFormat | None = None) -> list[Conversation]:
    """The conversations in ``path``, in ``fmt`` or in the format its content shows."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UnreadableConversation(f"{path}: cannot be read ({error})") from error
    data = _load(text, path)
    found = fmt or detect_format(data)
    if found is None:
        raise UnreadableConversation(
            f"{path}: not a known conversation format (openai, locomo, swe-agent, tau-bench); "
            "pass --format"
        )
    reader = _READERS[found]
    try:
        conversations = reader(data, path.stem)
    except (KeyError, TypeError, AttributeError, ValueError) as error:
        raise UnreadableConversation(f"{path}: not a valid {found.value} file ({error})") from error
    if not conversations or not any(c.messages for c in conversations):
        raise UnreadableConversation(f"{path}: holds no messages")
    return conversations


def _load(text: str, path: Path) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    lines = [line for line in text.splitlines() if line.strip()]
    records = []
    for number, line in enumerate(lines, start=1):
        try:
            records.append(json.loads(line))
        except ValueError as error:
            raise UnreadableConversation(
                f"{path}: line {number} is not JSON ({error.args[0]})"
            ) from error
    return records


def detect_format(data: Any) -> ReplayFormat | None:
    """The format whose shape ``data`` has, or ``None``."""
    if isinstance(data, Mapping):
        if "speaker_a" in data and any(re.fullmatch(r"session_\d+", str(k)) for k in data):
            return ReplayFormat.LOCOMO
        if isinstance(data.get("history"), list) and "info" in data:
            return ReplayFormat.SWE_AGENT
        if isinstance(data.get("messages"), list):
            return ReplayFormat.OPENAI
        return None
    if isinstance(data, list) and data and all(isinstance(item, Mapping) for item in data):
        first = data[0]
        if "traj" in first and "info" in first:
            return ReplayFormat.TAU_BENCH
        if isinstance(first.get("conversation"), Mapping) and "qa" in first:
            return ReplayFormat.LOCOMO
        if all("role" in item or isinstance(item.get("messages"), list) for item in data):
            return ReplayFormat.OPENAI
    return None


# OpenAI ---------------------------------------------------------------------------------------


def _openai(data: Any, stem: str) -> list[Conversation]:
    if isinstance(data, Mapping):
        data = [data]
    if all(isinstance(item, Mapping) and "role" in item for item in data):
        return [Conversation(stem, ReplayFormat.OPENAI, [dict(item) for item in data])]
    conversations = []
    for number, item in enumerate(data, start=1):
        messages = item["messages"]
        if not isinstance(messages, list):
            raise TypeError(f"record {number}: messages is not a list")
        name = str(item.get("name") or item.get("id") or f"{stem}-{number}")
        conversations.append(
            Conversation(name, ReplayFormat.OPENAI, [dict(message) for message in messages])
        )
    return conversations


# LoCoMo ---------------------------------------------------------------------------------------


def _locomo(data: Any, stem: str) -> list[Conversation]:
    if isinstance(data, Mapping):
        return [locomo_conversation(data, f"locomo-{stem}")]
    return [
        locomo_conversation(
            {**item["conversation"], "qa": item["qa"]}, str(item.get("sample_id") or stem)
        )
        for item in data
    ]


def locomo_conversation(data: Mapping[str, Any], name: str) -> Conversation:
    """LoCoMo: the first speaker is the user, the second the assistant, each turn named; every
    session opens with a system message giving its date, and a shared photo becomes its caption
    in the text (what the others reply to)."""
    numbers = sorted(
        int(match.group(1))
        for key, value in data.items()
        if (match := re.fullmatch(r"session_(\d+)", str(key))) and value
    )
    speaker_a = data["speaker_a"]
    messages: list[Message] = []
    turns: dict[str, str] = {}
    for number in numbers:
        when = data.get(f"session_{number}_date_time") or "an unknown date"
        messages.append({"role": "system", "content": f"Session {number} began at {when}."})
        for turn in data[f"session_{number}"]:
            text = str(turn["text"])
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            role = "user" if turn["speaker"] == speaker_a else "assistant"
            messages.append({"role": role, "name": _participant(turn["speaker"]), "content": text})
            if turn.get("dia_id"):
                turns[str(turn["dia_id"])] = text
    reference = {
        "qa": list(data.get("qa", [])),
        "speakers": [speaker_a, data.get("speaker_b", "")],
        "turns": turns,
    }
    return Conversation(name, ReplayFormat.LOCOMO, messages, reference)


def _participant(name: object) -> str:
    """A speaker's name as a chat ``name`` field accepts it (letters, digits, ``_`` and ``-``)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", str(name)).strip("_")[:64] or "speaker"


# SWE-agent ------------------------------------------------------------------------------------


def _swe_agent(data: Any, stem: str) -> list[Conversation]:
    return [swe_agent_conversation(data, stem)]


def swe_agent_conversation(data: Mapping[str, Any], name: str) -> Conversation:
    """SWE-agent ``history``: actions become tool calls and observations their results; a
    demonstration (an example trajectory, not this task) becomes a system message."""
    messages: list[Message] = []
    pending: tuple[str, str] | None = None
    for index, entry in enumerate(data["history"]):
        role = entry["role"]
        content = entry.get("content") or ""
        if not isinstance(content, str):
            content = json.dumps(content)
        if role == "system" or entry.get("is_demo"):
            messages.append({"role": "system", "content": content})
            continue
        if role == "assistant":
            action = str(entry.get("action") or "").strip()
            thought = str(entry.get("thought") or content)
            if action:
                call_id = f"call_{index}"
                tool = _participant(action.split()[0])
                pending = (call_id, tool)
                messages.append(
                    {
                        "role": "assistant",
                        "content": thought,
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {
                                    "name": tool,
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
            call_id, tool = pending
            messages.append(
                {"role": "tool", "tool_call_id": call_id, "name": tool, "content": content}
            )
            pending = None
        else:
            messages.append({"role": "user", "content": content})
    info = data.get("info") or {}
    reference = {
        "submission": str(info.get("submission") or ""),
        "exit_status": info.get("exit_status"),
    }
    return Conversation(name, ReplayFormat.SWE_AGENT, messages, reference)


# τ-bench --------------------------------------------------------------------------------------


def _tau_bench(data: Any, stem: str) -> list[Conversation]:
    return [tau_run(run) for run in data]


def tau_run(run: Mapping[str, Any]) -> Conversation:
    """One τ-bench run: its trajectory as it is, and the task's gold actions."""
    task = (run.get("info") or {}).get("task") or {}
    return Conversation(
        f"tau-task{run.get('task_id')}-trial{run.get('trial', 0)}",
        ReplayFormat.TAU_BENCH,
        [dict(message) for message in run["traj"]],
        {"actions": list(task.get("actions", [])), "instruction": task.get("instruction", "")},
    )


def chain(name: str, runs: Sequence[Conversation]) -> Conversation:
    """Runs back to back as one long agent session: the first system message once, then each
    run's other messages; the reference data of every run is kept (``actions`` concatenated)."""
    messages: list[Message] = []
    actions: list[Any] = []
    for index, run in enumerate(runs):
        messages += [m for m in run.messages if index == 0 or m.get("role") != "system"]
        actions += list(run.reference.get("actions", []))
    source = runs[0].source if runs else ReplayFormat.OPENAI
    return Conversation(name, source, messages, {"actions": actions})


_READERS = {
    ReplayFormat.OPENAI: _openai,
    ReplayFormat.LOCOMO: _locomo,
    ReplayFormat.SWE_AGENT: _swe_agent,
    ReplayFormat.TAU_BENCH: _tau_bench,
}
