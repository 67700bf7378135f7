"""The shared evaluation datasets: where they are and which conversations each one gives.

Owns the default location (``../shared/datasets`` beside the project; never copied into it),
the loaders that turn each folder into conversations (shared by replay, the evaluation and the
tests), and how τ-bench runs are chained into long agent sessions. A missing folder raises
``DatasetMissing`` naming the path; callers decide whether that skips or fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from app.replay.formats import (
    Conversation,
    ReplayFormat,
    chain,
    locomo_conversation,
    swe_agent_conversation,
    tau_run,
)

TAU_RUNS_PER_SHIFT: Final = 10
"""τ-bench runs chained into one agent session: one agent's shift of ten customers."""


def default_datasets_dir() -> Path:
    """``../shared/datasets`` relative to the project root (the folder holding ``app``)."""
    return Path(__file__).resolve().parents[2].parent / "shared" / "datasets"


class DatasetMissing(FileNotFoundError):
    def __init__(self, path: Path) -> None:
        super().__init__(f"dataset folder {path} is not present on this machine")
        self.path = path


def _folder(root: Path | None, name: str) -> Path:
    path = (root or default_datasets_dir()) / name
    if not path.is_dir():
        raise DatasetMissing(path)
    return path


def locomo(root: Path | None = None) -> list[Conversation]:
    """Every LoCoMo conversation (``locomo/locomo10_v2/*.json``), named ``locomo-<file>``."""
    return [
        locomo_conversation(json.loads(path.read_text(encoding="utf-8")), f"locomo-{path.stem}")
        for path in sorted((_folder(root, "locomo") / "locomo10_v2").glob("*.json"))
    ]


def swe_agent(root: Path | None = None) -> list[Conversation]:
    """Every SWE-agent trajectory (``swe-agent-trajectories/*.traj``), named by its file."""
    return [
        swe_agent_conversation(json.loads(path.read_text(encoding="utf-8")), path.stem)
        for path in sorted(_folder(root, "swe-agent-trajectories").glob("*.traj"))
    ]


def tau_airline(root: Path | None = None, limit: int | None = None) -> list[Conversation]:
    """τ-bench airline runs, one conversation each, in file order (the first ``limit``)."""
    path = _folder(root, "tau-bench-airline") / "gpt-4o-airline.json"
    runs = json.loads(path.read_text(encoding="utf-8"))
    return [tau_run(run) for run in runs[:limit]]


def tau_airline_shift(root: Path | None, runs: int, *, first: int = 0) -> Conversation:
    """``runs`` airline runs from run ``first`` on, back to back as one agent's long session."""
    chosen = tau_airline(root, limit=first + runs)[first:]
    return chain(f"tau-airline-{first + 1}-{first + len(chosen)}", chosen)


def tau_airline_shifts(
    root: Path | None = None, runs_per_shift: int = TAU_RUNS_PER_SHIFT
) -> list[Conversation]:
    """All runs in shifts of ``runs_per_shift`` (a shorter last shift is dropped)."""
    runs = tau_airline(root)
    return [
        chain(
            f"tau-airline-{start + 1}-{start + runs_per_shift}",
            runs[start : start + runs_per_shift],
        )
        for start in range(0, len(runs) - runs_per_shift + 1, runs_per_shift)
    ]


def dialogsum(root: Path | None = None, limit: int | None = None) -> list[Conversation]:
    """Short DialogSum dialogues: ``#Person1#`` is the user, ``#Person2#`` the assistant."""
    path = _folder(root, "dialogsum") / "dialogsum.dev.jsonl"
    conversations = []
    for line in path.read_text(encoding="utf-8").splitlines()[:limit]:
        record = json.loads(line)
        messages = []
        for turn in str(record["dialogue"]).splitlines():
            match = re.match(r"#Person(\d)#:\s*(.*)", turn)
            if match is not None:
                role = "user" if match.group(1) == "1" else "assistant"
                messages.append({"role": role, "content": match.group(2)})
        conversations.append(
            Conversation(
                str(record["fname"]),
                ReplayFormat.OPENAI,
                messages,
                {"summary": record["summary"]},
            )
        )
    return conversations


@dataclass(frozen=True, slots=True)
class EvaluationSet:
    """One family of long conversations the retention evaluation replays."""

    name: str
    folder: str
    load: Callable[[Path], list[Conversation]]


EVALUATION_SETS: Final = (
    EvaluationSet("locomo", "locomo", locomo),
    EvaluationSet("tau-bench", "tau-bench-airline", tau_airline_shifts),
    EvaluationSet("swe-agent", "swe-agent-trajectories", swe_agent),
)

ADVERSARY_SETS: Final = (
    *EVALUATION_SETS,
    EvaluationSet("dialogsum", "dialogsum", dialogsum),
)
"""The adversary evaluation also attacks DialogSum's short dialogues (too short for the
retention evaluation's budgets: each fits 2 000 tokens raw)."""


@dataclass(frozen=True, slots=True)
class FoundSet:
    set: EvaluationSet
    path: Path
    present: bool


def find_sets(
    root: Path,
    names: frozenset[str] | None = None,
    among: tuple[EvaluationSet, ...] = EVALUATION_SETS,
) -> list[FoundSet]:
    """Which sets of ``among`` are under ``root`` (all of them, or only those ``names`` asks
    for)."""
    return [
        FoundSet(item, root / item.folder, (root / item.folder).is_dir())
        for item in among
        if names is None or item.name in names
    ]
