"""The one progress display of long command-line work (export and imports, replay, evaluation,
re-embedding): a bar per task on a terminal, and otherwise plain lines, each written and flushed at
once, so a log, a pipe or a CI job can follow the work as it goes.

Presentation only: it shows the counts and texts it is given, never reads the work itself.
"""

from __future__ import annotations

from types import TracebackType
from typing import IO, Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)


def position(done: int, total: int | None) -> str:
    """Where a plain line stands in the run: ``[2/5]``, or ``[2]`` while the total is unknown."""
    return f"[{done}]" if total is None else f"[{done}/{total}]"


def literal(text: str) -> str:
    """``text`` as a column's format string that shows it as it is (a name may hold braces)."""
    return text.replace("{", "{{").replace("}", "}}")


def columns(label: str, unit: str | None) -> tuple[ProgressColumn, ...]:
    """The bar's columns: the label, the bar, done/total (and the unit), time spent, the task."""
    counted: tuple[ProgressColumn, ...] = (MofNCompleteColumn(),)
    if unit is not None:
        counted += (TextColumn(literal(unit), markup=False),)
    return (
        TextColumn(literal(label), style="bold", markup=False),
        BarColumn(),
        *counted,
        TimeElapsedColumn(),
        TextColumn("{task.description}", markup=False),
    )


class ProgressDisplay:
    """Use it as a context manager; the features' listeners build on it.

    ``begin`` starts a task (one more bar on a terminal), ``advance`` counts along it, ``describe``
    says what is happening (beside the bar, or as a line), ``line`` is said only off a terminal
    (the bar shows it otherwise), and ``end`` closes a task with its count. Plain lines go to
    ``stream`` (the console's own file unless given). ``finish`` runs when the work ended well,
    before the bar goes: the place for a last line.
    """

    def __init__(
        self,
        console: Console,
        label: str,
        *,
        unit: str | None = None,
        stream: IO[str] | None = None,
    ) -> None:
        self.console = console
        self.label = label
        self.unit = unit
        self.stream = stream
        self.on_terminal = console.is_terminal
        self.bar: Progress | None = None
        self.task_id: TaskID | None = None
        self.completed = 0
        self.total: int | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if kind is None:
                self.finish()
        finally:
            # Transient: the bar leaves the screen, so an error after it stays one line.
            if self.bar is not None:
                self.bar.stop()

    def finish(self) -> None:
        return None

    def begin(self, total: int | None, description: str = "") -> None:
        """A new task of ``total`` steps (``None``: not known yet); the count starts again."""
        self.completed, self.total = 0, total
        if not self.on_terminal:
            return
        if self.bar is None:
            self.bar = Progress(
                *columns(self.label, self.unit), console=self.console, transient=True
            )
            self.bar.start()
        self.task_id = self.bar.add_task(description, total=total)

    def advance(self, count: int = 1, description: str | None = None) -> None:
        self.completed += count
        if self.bar is not None and self.task_id is not None:
            self.bar.update(self.task_id, advance=count, description=description)

    def describe(self, text: str) -> None:
        """Beside the bar on a terminal; a line of its own otherwise."""
        if self.bar is not None and self.task_id is not None:
            self.bar.update(self.task_id, description=text)
        else:
            self.line(text)

    def line(self, text: str) -> None:
        """A line for whoever follows the output off a terminal; on one, the bar says it."""
        if self.on_terminal:
            return
        stream = self.stream if self.stream is not None else self.console.file
        stream.write(text + "\n")
        # Flushed at once: a log or a pipe sees each step as it happens, not when a buffer fills.
        stream.flush()

    def end(self, text: str) -> None:
        """The task is done: its bar stops at the count reached (a total given up front may have
        been an estimate); off a terminal, ``text`` is its line."""
        if self.bar is not None and self.task_id is not None:
            self.bar.update(self.task_id, total=self.completed, completed=self.completed)
        self.line(text)
