"""The evaluation over the shared datasets: which sets are there, each conversation evaluated.

Owns saying which sets were found and which were not (loudly: an evaluation that silently
skipped a set would report the wrong figures), running every conversation of the found sets
against one service, and the header of the results (datasets, schedule, generator). Holds no
scoring rule of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console

from app.config import Settings
from app.replay.console import ReplayProgress
from app.replay.datasets import FoundSet, find_sets
from app.replay.evaluation import ConversationResult, EvalOptions, evaluate
from app.replay.target import in_process, throwaway_database


class NoDatasets(Exception):
    """None of the asked-for sets is under the datasets folder."""


@dataclass(slots=True)
class SuiteRun:
    found: list[FoundSet]
    results: list[ConversationResult] = field(default_factory=list)

    def header(self, generator: str, options: EvalOptions) -> dict[str, Any]:
        schedule = options.schedule
        return {
            "generator": generator,
            "datasets": {
                "found": {f.set.name: str(f.path) for f in self.found if f.present},
                "missing": {f.set.name: str(f.path) for f in self.found if not f.present},
            },
            "schedule": {
                "commit_every_messages": schedule.every,
                "commit_at_pending_tokens": schedule.pending_tokens,
                "keep_recent_count": schedule.keep,
            },
            "budgets": list(options.budgets),
            "reserve_tokens": options.reserve_tokens,
        }


def announce(console: Console, found: Sequence[FoundSet]) -> None:
    for item in found:
        if item.present:
            console.print(f"evaluation: using {item.set.name} from {item.path}", highlight=False)
        else:
            console.print(
                f"[bold red]evaluation: {item.set.name} NOT FOUND at {item.path}; "
                "its figures are missing from this run[/bold red]"
            )


async def run_suite(
    http: httpx.AsyncClient,
    root: Path,
    options: EvalOptions,
    console: Console,
    *,
    sets: frozenset[str] | None = None,
    limit: int | None = None,
) -> SuiteRun:
    """Evaluate every conversation of the sets found under ``root`` (the first ``limit`` of
    each set, when given), in set order."""
    run = SuiteRun(find_sets(root, sets))
    announce(console, run.found)
    present = [item for item in run.found if item.present]
    if not present:
        raise NoDatasets(f"no evaluation set found under {root}")
    for item in present:
        conversations = item.set.load(root)[:limit]
        for conversation in conversations:
            label = f"{item.set.name}: {conversation.name[:40]}"
            with ReplayProgress(console, len(conversation.messages), label) as progress:
                result = await evaluate(
                    http, conversation, item.set.name, options, progress=progress
                )
            run.results.append(result)
            middle = options.budgets[len(options.budgets) // 2]
            shares = {
                mode: result.scores[middle][mode].share
                for mode in ("truncation", "default", "filled")
            }
            console.print(
                f"{label}: {result.messages} messages, {result.archives} archives, "
                f"WM {result.wm_tokens} tokens, lost {len(result.losses)}; recall at {middle}: "
                + ", ".join(
                    f"{mode} {'–' if share is None else f'{share:.2f}'}"
                    for mode, share in shares.items()
                ),
                highlight=False,
            )
    return run


async def run_on_throwaway(
    settings: Settings,
    root: Path,
    options: EvalOptions,
    console: Console,
    *,
    sets: frozenset[str] | None = None,
    limit: int | None = None,
) -> SuiteRun:
    """``run_suite`` against the service in this process on a fresh embedded database that is
    deleted afterwards; ``settings`` choose the generator (the offline extractor by default)."""
    found = find_sets(root, sets)
    if not any(item.present for item in found):
        # Before the database starts: there would be nothing to evaluate on it.
        announce(console, found)
        raise NoDatasets(f"no evaluation set found under {root}")
    async with throwaway_database() as fresh:
        local = settings.model_copy(update={"database_url": fresh.app_url})
        async with in_process(local, fresh.api_key) as http:
            return await run_suite(http, root, options, console, sets=sets, limit=limit)
