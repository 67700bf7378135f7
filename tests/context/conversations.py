"""Long conversations from the shared evaluation datasets, as messages the service accepts.

Read from ``../shared/datasets`` relative to the project root, never copied into the project; a
test that needs an absent folder is skipped with the reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

DATASETS: Final = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"


@dataclass(frozen=True, slots=True)
class Conversation:
    name: str
    messages: list[dict[str, Any]]


def _folder(name: str) -> Path:
    path = DATASETS / name
    if not path.is_dir():
        pytest.skip(f"dataset folder {path} is not present on this machine")
    return path


def locomo() -> list[Conversation]:
    """LoCoMo chats: the first speaker is the user, the second the assistant; each session opens
    with a system line giving its date, and a shared photo becomes its caption in the text."""
    conversations = []
    for path in sorted((_folder("locomo") / "locomo10_v2").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        numbers = sorted(
            int(match.group(1))
            for key, value in data.items()
            if (match := re.fullmatch(r"session_(\d+)", key)) and value
        )
        messages: list[dict[str, Any]] = []
        for number in numbers:
            when = data.get(f"session_{number}_date_time", "an unknown date")
            messages.append({"role": "system", "content": f"Session {number} began at {when}."})
            for turn in data[f"session_{number}"]:
                text = turn["text"]
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                role = "user" if turn["speaker"] == data["speaker_a"] else "assistant"
                messages.append({"role": role, "name": turn["speaker"], "content": text})
        conversations.append(Conversation(f"locomo-{path.stem}", messages))
    return conversations


def tau_airline_shift(runs: int) -> Conversation:
    """The first ``runs`` airline-agent trajectories back to back, as one agent's long session:
    the policy (the system message) once, then each run's customer, agent and tool messages.
    Tool results keep the ``name`` field the dataset gives them."""
    data = json.loads(
        (_folder("tau-bench-airline") / "gpt-4o-airline.json").read_text(encoding="utf-8")
    )
    messages: list[dict[str, Any]] = []
    for index, run in enumerate(data[:runs]):
        for message in run["traj"]:
            if message["role"] == "system" and index > 0:
                continue
            messages.append(dict(message))
    return Conversation(f"tau-airline-{runs}-runs", messages)
