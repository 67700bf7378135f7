"""How export and import show themselves: a progress bar per table on a terminal, one plain line
per table otherwise (so logs and pipes can follow), through the shared progress display."""

from __future__ import annotations

from typing import IO

from rich.console import Console

from app.progress import ProgressDisplay


class BundleProgress(ProgressDisplay):
    """A ``service.Listener``; use it as a context manager."""

    def __init__(self, console: Console, stream: IO[str], verb: str) -> None:
        super().__init__(console, verb, stream=stream)
        self.current: str | None = None

    def table(self, name: str, total: int) -> None:
        self.finish()
        self.current = name
        # An empty table draws a bar that pulses rather than one stuck at 0/0.
        self.begin(total or None, name)

    def finish(self) -> None:
        if self.current is not None:
            self.end(f"{self.label} {self.current}: {self.completed} rows")
            self.current = None
