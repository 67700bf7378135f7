"""Replay progress: a bar over the messages on a terminal, one line per archive otherwise
(no database, no server)."""

from __future__ import annotations

import io

from rich.console import Console

from app.replay.console import ReplayProgress
from app.replay.run import ArchiveOutcome


def archive(seq: int, start: int, end: int, status: str = "done") -> ArchiveOutcome:
    return ArchiveOutcome(seq, start, end, status, "offline", 120, [])


def test_one_line_per_archive_off_a_terminal() -> None:
    screen = io.StringIO()
    with ReplayProgress(Console(file=screen, force_terminal=False), 5, "replaying c") as progress:
        progress.appended(2)
        progress.committed(archive(1, 1, 1))
        progress.appended(3)
        progress.committed(archive(2, 2, 4, "failed"))
    assert screen.getvalue().splitlines() == [
        "archive 1: messages 1-1 done",
        "archive 2: messages 2-4 failed",
    ]
    assert progress.bar is None


def test_a_bar_over_the_messages_on_a_terminal() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    with ReplayProgress(console, 5, "locomo: conv-26") as progress:
        progress.appended(2)
        progress.committed(archive(1, 1, 1))
        progress.appended(3)
        assert progress.bar is not None
        (task,) = progress.bar.tasks
        assert (task.completed, task.total) == (5, 5)
        assert task.description == "archive 1: messages 1-1 done"
    shown = screen.getvalue()
    assert "locomo: conv-26" in shown
    assert "5/5" in shown
    assert "messages" in shown
    assert "archive 1: messages 1-1 done" in shown
