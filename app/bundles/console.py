"""How export and import show themselves: a progress bar per table on a terminal, one plain line
per table otherwise (so logs and pipes can follow), as the other importers do."""

from __future__ import annotations

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


class BundleProgress:
    """A ``service.Listener``; use it as a context manager."""

    def __init__(self, console: Console, stream: IO[str], verb: str) -> None:
        self.console = console
        self.stream = stream
        self.verb = verb
        self.bar: Progress | None = None
        self.task_id: TaskID | None = None
        self.current: str | None = None
        self.rows = 0

    def __enter__(self) -> BundleProgress:
        if self.console.is_terminal:
            self.bar = Progress(
                TextColumn(f"[bold]{self.verb}[/bold]"),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.bar.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is None:
            self._done()
        if self.bar is not None:
            self.bar.stop()

    def table(self, name: str, total: int) -> None:
        self._done()
        self.current, self.rows = name, 0
        if self.bar is not None:
            self.task_id = self.bar.add_task(name, total=total or None)

    def advance(self, rows: int) -> None:
        self.rows += rows
        if self.bar is not None and self.task_id is not None:
            self.bar.update(self.task_id, advance=rows)

    def _done(self) -> None:
        if self.current is None:
            return
        if self.bar is not None and self.task_id is not None:
            self.bar.update(self.task_id, total=self.rows, completed=self.rows)
        else:
            self.stream.write(f"{self.verb} {self.current}: {self.rows} rows\n")
            self.stream.flush()
        self.current = None
