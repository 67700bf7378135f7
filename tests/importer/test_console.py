"""Progress: a bar on a terminal, one plain line per session otherwise (no database)."""

from __future__ import annotations

import io

from rich.console import Console

from app.importer.openviking.console import ImportProgress
from app.importer.openviking.reader import find_sessions, read_session
from app.importer.openviking.summary import SessionOutcome, SessionStatus
from tests.support.openviking import SAMPLE


def outcomes() -> list[SessionOutcome]:
    refs, _ = find_sessions(SAMPLE)
    return [
        SessionOutcome(read_session(ref, base=SAMPLE, max_message_bytes=1 << 20), status, ())
        for ref, status in zip(
            refs,
            (SessionStatus.IMPORTED, SessionStatus.ALREADY_IMPORTED, SessionStatus.WOULD_IMPORT),
            strict=True,
        )
    ]


def test_plain_lines_when_not_on_a_terminal() -> None:
    screen, stream = io.StringIO(), io.StringIO()
    with ImportProgress(Console(file=screen, force_terminal=False), stream) as progress:
        found = outcomes()
        progress.started(len(found))
        for outcome in found:
            progress.finished(outcome)
    assert stream.getvalue().splitlines() == [
        "3 session folder(s) found",
        "[1/3] imported acme/alice/locomo-conv26: 35 messages (35 stored), 2 archives",
        "[2/3] already imported acme/alice/swe-marshmallow-1867",
        "[3/3] would import acme/alice/tau-airline-task0-trial0: 23 messages (31 stored), 2 archives",
    ]
    assert screen.getvalue() == ""


def test_a_progress_bar_on_a_terminal() -> None:
    screen, stream = io.StringIO(), io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    with ImportProgress(console, stream) as progress:
        found = outcomes()
        progress.started(len(found))
        for outcome in found:
            progress.finished(outcome)
        assert progress.bar is not None
        (task,) = progress.bar.tasks
        assert (task.completed, task.total) == (3, 3)
        assert task.description == "acme/alice/tau-airline-task0-trial0"
    assert stream.getvalue() == ""
    assert "importing" in screen.getvalue()
