"""How an import run shows itself: a progress bar on a terminal, one plain line per session
otherwise (so logs and pipes can follow it), and the summary table at the end.

Presentation only: every figure comes from ``summary``.
"""

from __future__ import annotations

from collections import Counter
from types import TracebackType
from typing import IO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from app.importer.openviking.records import stored_count
from app.importer.openviking.summary import SessionOutcome, SessionStatus, Summary

_VERBS = {
    SessionStatus.IMPORTED: "imported",
    SessionStatus.WOULD_IMPORT: "would import",
    SessionStatus.ALREADY_IMPORTED: "already imported",
    SessionStatus.CHANGED_SINCE_IMPORT: "changed since import, left as it is",
    SessionStatus.EXTERNAL_ID_TAKEN: "external_id taken, not imported",
    SessionStatus.FAILED: "not imported",
}


class ImportProgress:
    """A ``Listener`` for ``run.import_workspace``; use it as a context manager."""

    def __init__(self, console: Console, stream: IO[str]) -> None:
        self.console = console
        self.stream = stream
        self.total = 0
        self.done = 0
        self.bar: Progress | None = None
        self.task_id: TaskID | None = None

    def __enter__(self) -> ImportProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.bar is not None:
            self.bar.stop()

    def started(self, total: int) -> None:
        self.total = total
        if self.console.is_terminal:
            self.bar = Progress(
                TextColumn("[bold]importing[/bold]"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=self.console,
                transient=True,
            )
            self.bar.start()
            self.task_id = self.bar.add_task("", total=total)
        else:
            self._line(f"{total} session folder(s) found")

    def finished(self, outcome: SessionOutcome) -> None:
        self.done += 1
        label = outcome.session.ref.label
        if self.bar is not None and self.task_id is not None:
            self.bar.update(self.task_id, advance=1, description=label)
            return
        session = outcome.session
        line = f"[{self.done}/{self.total}] {_VERBS[outcome.status]} {label}"
        if outcome.status.counted:
            line += (
                f": {len(session.messages)} messages ({stored_count(session.messages)} stored),"
                f" {len(session.archives)} archives"
            )
        elif outcome.reason is not None:
            line += f": {outcome.reason.detail}"
        self._line(line)

    def _line(self, text: str) -> None:
        # Flushed at once, so whoever follows the output sees each session as it is stored.
        self.stream.write(text + "\n")
        self.stream.flush()


def render_summary(console: Console, summary: Summary) -> None:
    figures = summary.figures()
    title = "OpenViking import" + (" (dry run: nothing was written)" if summary.dry_run else "")
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("count")
    sessions = figures["agent_sessions"]
    verb = "would be imported" if summary.dry_run else "imported"
    table.add_row(
        "agent sessions",
        f"{sessions['imported']} {verb} of {sessions['found']} found; "
        f"{sessions['already_imported']} already imported, "
        f"{sessions['changed_since_import']} changed since import, "
        f"{sessions['external_id_taken']} external_id taken, {sessions['failed']} failed",
    )
    messages = figures["messages"]
    table.add_row("messages", f"{messages['openviking']} OpenViking → {messages['stored']} stored")
    archives = figures["archives"]
    table.add_row("archives", ", ".join(f"{count} {status}" for status, count in archives.items()))
    memory = figures["working_memory"]
    table.add_row(
        "working memory", f"{memory['v2']} v2, {memory['legacy']} legacy, {memory['none']} none"
    )
    table.add_row("tool parts", str(figures["tool_parts"]))
    problems = summary.problems
    kinds = Counter(problem.kind.value for problem in problems)
    table.add_row(
        "problems",
        str(len(problems))
        + (f" ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))})" if kinds else ""),
    )
    console.print(table)
    if not sessions["imported"] and not sessions["failed"] and sessions["found"]:
        console.print("Nothing new to import.")
    if problems:
        listing = Table(title="Problems", title_justify="left")
        listing.add_column("where", overflow="fold")
        listing.add_column("kind")
        listing.add_column("what was done", overflow="fold")
        for problem in problems:
            listing.add_row(problem.where, problem.kind.value, problem.detail)
        console.print(listing)
