"""How an import run shows itself: a progress bar on a terminal, one plain line per session
otherwise (so logs and pipes can follow it), and the summary table at the end.

Presentation only: every figure comes from ``summary``.
"""

from __future__ import annotations

from collections import Counter
from typing import IO

from rich.console import Console
from rich.table import Table

from app.importer.openviking.records import stored_count
from app.importer.openviking.summary import SessionOutcome, SessionStatus, Summary
from app.progress import ProgressDisplay, position

_VERBS = {
    SessionStatus.IMPORTED: "imported",
    SessionStatus.WOULD_IMPORT: "would import",
    SessionStatus.ALREADY_IMPORTED: "already imported",
    SessionStatus.CHANGED_SINCE_IMPORT: "changed since import, left as it is",
    SessionStatus.EXTERNAL_ID_TAKEN: "external_id taken, not imported",
    SessionStatus.FAILED: "not imported",
}


class ImportProgress(ProgressDisplay):
    """A ``Listener`` for ``run.import_workspace``; use it as a context manager."""

    def __init__(self, console: Console, stream: IO[str]) -> None:
        super().__init__(console, "importing", stream=stream)

    def started(self, total: int) -> None:
        self.begin(total)
        self.line(f"{total} session folder(s) found")

    def finished(self, outcome: SessionOutcome) -> None:
        session = outcome.session
        label = session.ref.label
        self.advance(1, description=label)
        line = f"{position(self.completed, self.total)} {_VERBS[outcome.status]} {label}"
        if outcome.status.counted:
            line += (
                f": {len(session.messages)} messages ({stored_count(session.messages)} stored),"
                f" {len(session.archives)} archives"
            )
        elif outcome.reason is not None:
            line += f": {outcome.reason.detail}"
        self.line(line)


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
