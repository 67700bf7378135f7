"""LoCoMo conversations for long-term memory tests, with each turn's seq once replayed.

Speaker A is the user (the agent session's ``user_id``), speaker B the assistant, and each
session opens with a system message giving its date, as ``app/replay/datasets.py`` replays them;
beside the messages this keeps what the memory tests check against: the seq of every dialogue
turn, the dataset's own observations (paraphrased facts citing their turn) and its QA items.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.datasets import DATASETS


@dataclass(frozen=True, slots=True)
class Paraphrase:
    """A fact about a speaker in the dataset's own words, citing the turns that state it."""

    text: str
    seqs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    name: str
    user: str
    messages: list[dict[str, Any]]
    seq_of: dict[str, int]
    """Dialogue id (``D3:7``) → seq once replayed from seq 1."""
    observations: list[Paraphrase]
    """The dataset's observations about the user (speaker A)."""
    questions: list[Paraphrase]
    """QA questions about the user whose evidence is the user's own turns."""


def load(name: str) -> Conversation:
    folder = DATASETS / "locomo" / "locomo10_v2"
    if not folder.is_dir():
        pytest.skip(f"dataset folder {folder} is not present on this machine")
    data = json.loads((folder / f"{name}.json").read_text("utf-8"))
    user = data["speaker_a"]
    messages: list[dict[str, Any]] = []
    seq_of: dict[str, int] = {}
    numbers = sorted(
        int(match.group(1))
        for key in data
        if (match := re.fullmatch(r"session_(\d+)", key)) and data[key]
    )
    for number in numbers:
        when = data.get(f"session_{number}_date_time", "")
        messages.append({"role": "system", "content": f"Session {number} began at {when}."})
        for turn in data[f"session_{number}"]:
            role = "user" if turn["speaker"] == user else "assistant"
            messages.append({"role": role, "name": turn["speaker"], "content": turn["text"]})
            seq_of[turn["dia_id"]] = len(messages)
    users_turns = {
        dia_id
        for number in numbers
        for turn in data[f"session_{number}"]
        if turn["speaker"] == user
        for dia_id in [turn["dia_id"]]
    }
    observations = [
        Paraphrase(fact, (seq_of[dia_id],))
        for number in numbers
        for fact, dia_id in data.get(f"session_{number}_observation", {}).get(user, [])
        if isinstance(dia_id, str) and dia_id in users_turns
    ]
    questions = [
        Paraphrase(item["question"], tuple(seq_of[d] for d in item["evidence"] if d in seq_of))
        for item in data["qa"]
        if user in item["question"]
        and item["evidence"]
        and all(d in users_turns for d in item["evidence"])
    ]
    return Conversation(name, user, messages, seq_of, observations, questions)
