"""The progress display of long commands: its pure parts, the plain lines off a terminal (a pipe,
a log, ``CI=true``) and the bar on one (no database)."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping

import pytest
from rich.console import Console

from app.progress import ProgressDisplay, literal, position

Step = Callable[[ProgressDisplay], None]


@pytest.mark.parametrize(
    ("done", "total", "shown"),
    [
        (0, None, "[0]"),
        (7, None, "[7]"),
        (0, 0, "[0/0]"),
        (0, 3, "[0/3]"),
        (1, 3, "[1/3]"),
        (2, 3, "[2/3]"),
        (3, 3, "[3/3]"),
        (4, 3, "[4/3]"),
    ],
)
def test_position(done: int, total: int | None, shown: str) -> None:
    assert position(done, total) == shown


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("", ""),
        ("exporting", "exporting"),
        ("[bold]x[/bold]", "[bold]x[/bold]"),
        ("{task.description}", "{{task.description}}"),
        ("a}b{c", "a}}b{{c"),
    ],
)
def test_literal_doubles_only_braces(text: str, escaped: str) -> None:
    assert literal(text) == escaped
    assert literal(text).format() == text


def plain(console: Console | None = None) -> tuple[ProgressDisplay, io.StringIO, io.StringIO]:
    screen, stream = io.StringIO(), io.StringIO()
    shown = console or Console(file=screen, force_terminal=False)
    return ProgressDisplay(shown, "working", unit="items", stream=stream), screen, stream


@pytest.mark.parametrize(
    ("steps", "lines"),
    [
        ([], []),
        ([lambda d: d.begin(3), lambda d: d.advance(2)], []),
        ([lambda d: d.line("3 found")], ["3 found"]),
        ([lambda d: d.begin(3), lambda d: d.describe("first")], ["first"]),
        ([lambda d: d.describe("before any task")], ["before any task"]),
        (
            [
                lambda d: d.begin(2),
                lambda d: d.advance(1, description="a"),
                lambda d: d.line(f"{position(d.completed, d.total)} a"),
                lambda d: d.advance(1, description="b"),
                lambda d: d.line(f"{position(d.completed, d.total)} b"),
            ],
            ["[1/2] a", "[2/2] b"],
        ),
        (
            [
                lambda d: d.begin(None),
                lambda d: d.advance(5),
                lambda d: d.end(f"t: {d.completed} rows"),
                lambda d: d.begin(10),
                lambda d: d.end(f"u: {d.completed} rows"),
            ],
            ["t: 5 rows", "u: 0 rows"],
        ),
        ([lambda d: d.line("[bold]{x}[/bold]")], ["[bold]{x}[/bold]"]),
    ],
)
def test_plain_lines_off_a_terminal(steps: list[Step], lines: list[str]) -> None:
    display, screen, stream = plain()
    with display:
        for step in steps:
            step(display)
    assert display.bar is None
    assert stream.getvalue().splitlines() == lines
    assert screen.getvalue() == ""


class Flushes(io.StringIO):
    """Keeps what was flushed apart from what was only written."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed = ""

    def flush(self) -> None:
        self.flushed = self.getvalue()


def test_each_plain_line_is_flushed_as_it_is_written() -> None:
    stream = Flushes()
    display = ProgressDisplay(Console(file=io.StringIO(), force_terminal=False), "x", stream=stream)
    display.line("one")
    assert stream.flushed == "one\n"
    display.describe("two")
    assert stream.flushed == "one\ntwo\n"


def test_plain_lines_go_to_the_console_file_unless_a_stream_is_given() -> None:
    screen = io.StringIO()
    display = ProgressDisplay(Console(file=screen, force_terminal=False), "x")
    display.line("on the console's own file")
    assert screen.getvalue() == "on the console's own file\n"


@pytest.mark.parametrize(
    ("environ", "bar"),
    [
        ({}, False),
        ({"CI": "true"}, False),
        ({"CI": "true", "TERM": "xterm-256color"}, False),
        ({"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}, False),
        ({"CI": "true", "FORCE_COLOR": "1"}, True),
        ({"TTY_COMPATIBLE": "1"}, True),
    ],
)
def test_a_bar_only_where_the_output_is_a_terminal(environ: Mapping[str, str], bar: bool) -> None:
    """Output to a file (a pipe, a CI log) gets lines, ``CI=true`` or not; a job that says its log
    is a terminal gets the bar."""
    display, _, stream = plain(Console(file=io.StringIO(), _environ=environ))
    with display:
        display.begin(1)
        display.describe("step")
        assert (display.bar is not None) is bar
    assert stream.getvalue() == ("" if bar else "step\n")


def terminal(
    label: str = "working", unit: str | None = "items"
) -> tuple[ProgressDisplay, io.StringIO, io.StringIO]:
    screen, stream = io.StringIO(), io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    return ProgressDisplay(console, label, unit=unit, stream=stream), screen, stream


def test_on_a_terminal_a_bar_per_task_and_no_lines() -> None:
    display, screen, stream = terminal()
    with display:
        display.begin(10, "first")
        display.advance(4)
        display.line("only off a terminal")
        display.end("first: 4 rows")
        display.begin(None, "second")
        display.advance(2, description="second, later")
        display.describe("second, at the end")
        assert display.bar is not None
        shown = [(task.description, task.completed, task.total) for task in display.bar.tasks]
        assert shown == [("first", 4, 4), ("second, at the end", 2, None)]
    assert display.bar.live.is_started is False
    assert stream.getvalue() == ""
    assert "working" in screen.getvalue()
    assert "items" in screen.getvalue()


def test_label_and_unit_are_shown_as_they_are() -> None:
    display, screen, _ = terminal(label="eval {x} [red]y[/red]", unit="{n}")
    with display:
        display.begin(1, "[b]{task}[/b]")
    assert "eval {x} [red]y[/red]" in screen.getvalue()
    assert "[b]{task}[/b]" in screen.getvalue()
    assert "{n}" in screen.getvalue()


class Closing(ProgressDisplay):
    def finish(self) -> None:
        self.end(f"closed at {self.completed}")


def test_finish_runs_when_the_work_ends_well() -> None:
    display, _, stream = plain()
    closing = Closing(display.console, "x", stream=stream)
    with closing:
        closing.begin(2)
        closing.advance(2)
    assert stream.getvalue() == "closed at 2\n"


def stop_halfway(closing: Closing) -> None:
    with closing:
        closing.begin(2)
        closing.advance(1)
        raise RuntimeError("stopped")


@pytest.mark.parametrize("on_terminal", [False, True])
def test_an_error_skips_finish_and_takes_the_bar_away(on_terminal: bool) -> None:
    screen, stream = io.StringIO(), io.StringIO()
    closing = Closing(Console(file=screen, force_terminal=on_terminal), "x", stream=stream)
    with pytest.raises(RuntimeError, match="stopped"):
        stop_halfway(closing)
    assert stream.getvalue() == ""
    assert (closing.bar is not None) is on_terminal
    if closing.bar is not None:
        assert closing.bar.live.is_started is False
