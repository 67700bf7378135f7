"""How replay and evaluation show themselves: a progress bar on a terminal (one plain line per
archive or conversation otherwise), the final working memory, and the guard-decision table.

Presentation only: every figure comes from ``run.Replayed`` or the evaluation's results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from rich.console import Console
from rich.table import Table

from app.progress import ProgressDisplay
from app.replay.run import ArchiveOutcome, Replayed


class ReplayProgress(ProgressDisplay):
    """A ``run.Progress`` over a number of messages; use it as a context manager."""

    def __init__(self, console: Console, total: int, label: str) -> None:
        super().__init__(console, label, unit="messages")
        self.messages = total

    def __enter__(self) -> Self:
        self.begin(self.messages)
        return self

    def appended(self, count: int) -> None:
        self.advance(count)

    def committed(self, archive: ArchiveOutcome) -> None:
        self.describe(
            f"archive {archive.archive_seq}: messages {archive.start_seq}-{archive.end_seq} "
            f"{archive.status}"
        )


def decisions_table(archives: Sequence[ArchiveOutcome]) -> Table:
    """One row per archive: its range, status, generator, and every decision a guard changed."""
    table = Table(title="Archives and guard decisions", show_lines=False)
    table.add_column("archive", justify="right")
    table.add_column("messages")
    table.add_column("status")
    table.add_column("generator")
    table.add_column("WM tokens", justify="right")
    table.add_column("guard decisions (section: requested → applied, reason)")
    for archive in archives:
        notes = [
            f"{d.get('section')}: {d.get('requested') or '–'} → {d.get('applied')}, "
            f"{d.get('reason')}"
            for d in archive.interventions
        ]
        table.add_row(
            str(archive.archive_seq),
            f"{archive.start_seq}-{archive.end_seq}",
            archive.status,
            archive.generator or "–",
            "–" if archive.wm_tokens is None else str(archive.wm_tokens),
            "\n".join(notes) or "all accepted",
        )
    return table


def render_replayed(console: Console, replayed: Replayed) -> None:
    """The final working memory as Markdown, then the per-archive decision table."""
    console.print(
        f"agent session {replayed.agent_session_id}: {replayed.messages} messages, "
        f"{len(replayed.archives)} archives",
        highlight=False,
    )
    current = replayed.working_memory
    if current and current.get("archive_seq"):
        console.print(str(current.get("markdown", "")), markup=False, highlight=False)
    else:
        console.print("no working memory yet: no commit made an archive", highlight=False)
    if replayed.archives:
        console.print(decisions_table(replayed.archives))
