"""Export and import progress: a bar per table on a terminal, one line per table otherwise
(no database)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from app.bundles.console import BundleProgress


def run(progress: BundleProgress, tables: list[tuple[str, int, list[int]]]) -> None:
    for name, total, batches in tables:
        progress.table(name, total)
        for rows in batches:
            progress.advance(rows)


@pytest.mark.parametrize(
    ("tables", "lines"),
    [
        ([], []),
        ([("messages", 6, [4, 2])], ["exporting messages: 6 rows"]),
        ([("pins", 0, [])], ["exporting pins: 0 rows"]),
        ([("pins", 3, [1])], ["exporting pins: 1 rows"]),
        (
            [("agent_sessions", 2, [2]), ("messages", 6, [6]), ("pins", 0, [])],
            [
                "exporting agent_sessions: 2 rows",
                "exporting messages: 6 rows",
                "exporting pins: 0 rows",
            ],
        ),
    ],
)
def test_one_line_per_table_off_a_terminal(
    tables: list[tuple[str, int, list[int]]], lines: list[str]
) -> None:
    screen, stream = io.StringIO(), io.StringIO()
    with BundleProgress(
        Console(file=screen, force_terminal=False), stream, "exporting"
    ) as progress:
        run(progress, tables)
    assert stream.getvalue().splitlines() == lines
    assert screen.getvalue() == ""


def stop_in_messages(progress: BundleProgress) -> None:
    with progress:
        run(progress, [("agent_sessions", 2, [2]), ("messages", 6, [3])])
        raise OSError("disk full")


def test_a_failed_run_says_nothing_of_the_table_it_stopped_in() -> None:
    stream = io.StringIO()
    console = Console(file=io.StringIO(), force_terminal=False)
    with pytest.raises(OSError, match="disk full"):
        stop_in_messages(BundleProgress(console, stream, "importing"))
    assert stream.getvalue().splitlines() == ["importing agent_sessions: 2 rows"]


def test_a_bar_per_table_on_a_terminal() -> None:
    screen, stream = io.StringIO(), io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    with BundleProgress(console, stream, "importing") as progress:
        run(progress, [("agent_sessions", 2, [2]), ("messages", 6, [4]), ("pins", 0, [])])
    assert progress.bar is not None
    shown = [(task.description, task.completed, task.total) for task in progress.bar.tasks]
    assert shown == [("agent_sessions", 2, 2), ("messages", 4, 4), ("pins", 0, 0)]
    assert stream.getvalue() == ""
    assert "importing" in screen.getvalue()
