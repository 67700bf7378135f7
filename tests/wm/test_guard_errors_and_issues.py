"""Guard E (Errors & Corrections, append-only) and guard F (Open Issues, no silent drop)."""

from __future__ import annotations

import pytest

from app.wm.ops import OpKind
from app.wm.reasons import Guard, Reason
from app.wm.sections import Section
from tests.wm.helpers import Op, append, keep, merge_one, update

ERRORS = Section.ERRORS
ISSUES = Section.OPEN_ISSUES
RESTORED = "[silently dropped, restored]"


@pytest.mark.parametrize(
    ("prior", "op", "applied", "body", "reason"),
    [
        (
            "- ValueError in parse",
            update("- TypeError in load"),
            OpKind.APPEND,
            "- ValueError in parse\n- TypeError in load",
            Reason.ERRORS_APPEND_ONLY,
        ),
        (
            "- ValueError in parse",
            update("- valueerror in parse."),
            OpKind.KEEP,
            "- ValueError in parse",
            Reason.ERRORS_APPEND_ONLY,
        ),
        (
            "- ValueError in parse",
            update(""),
            OpKind.KEEP,
            "- ValueError in parse",
            Reason.ERRORS_APPEND_ONLY,
        ),
        (
            "- ValueError in parse",
            append("User: no, use tabs"),
            OpKind.APPEND,
            "- ValueError in parse\n- User: no, use tabs",
            Reason.ACCEPTED,
        ),
        ("- ValueError in parse", keep(), OpKind.KEEP, "- ValueError in parse", Reason.ACCEPTED),
    ],
)
def test_errors_are_append_only(
    prior: str, op: Op, applied: OpKind, body: str, reason: Reason
) -> None:
    decision, result, _ = merge_one(ERRORS, prior, op)
    assert (decision.applied, result, decision.reason) == (applied, body, reason)
    assert decision.guard is Guard.APPEND_ONLY


@pytest.mark.parametrize(
    ("prior", "op", "applied", "body", "reason"),
    [
        (
            "- Why does the build fail?",
            update("- New question"),
            OpKind.UPDATE,
            f"- New question\n- {RESTORED} Why does the build fail?",
            Reason.OPEN_ISSUES_RESTORED,
        ),
        # Resolving keeps the snippet: nothing is restored.
        (
            "- Why does the build fail?",
            update("- [resolved] Why does the build fail?"),
            OpKind.UPDATE,
            "- [resolved] Why does the build fail?",
            Reason.ACCEPTED,
        ),
        # A closed issue may be dropped in one round.
        (
            "- [resolved] Why does the build fail?\n- [done] Ship v2",
            update("- next"),
            OpKind.UPDATE,
            "- next",
            Reason.ACCEPTED,
        ),
        # One second chance: an item carrying the marker is never restored again.
        (
            f"- {RESTORED} Why does the build fail?",
            update("- next"),
            OpKind.UPDATE,
            "- next",
            Reason.ACCEPTED,
        ),
        # Emphasis and backticks at the snippet's ends do not matter.
        (
            "- **Check `parser`**",
            update("- check `parser"),
            OpKind.UPDATE,
            "- check `parser",
            Reason.ACCEPTED,
        ),
        (
            "- Why does the build fail?",
            update(""),
            OpKind.UPDATE,
            f"- {RESTORED} Why does the build fail?",
            Reason.OPEN_ISSUES_RESTORED,
        ),
        ("- q1", keep(), OpKind.KEEP, "- q1", Reason.ACCEPTED),
        ("- q1", append("q2"), OpKind.APPEND, "- q1\n- q2", Reason.ACCEPTED),
    ],
)
def test_open_issues_are_never_dropped_silently(
    prior: str, op: Op, applied: OpKind, body: str, reason: Reason
) -> None:
    decision, result, _ = merge_one(ISSUES, prior, op)
    assert (decision.applied, result, decision.reason) == (applied, body, reason)
    assert decision.guard is Guard.NO_SILENT_DROP


def test_the_restore_marker_is_applied_once_and_never_twice() -> None:
    prior = "- Why does the build fail?\n- Is the cache stale?"
    _, first, _ = merge_one(ISSUES, prior, update("- Is the cache stale?"))
    assert first == f"- Is the cache stale?\n- {RESTORED} Why does the build fail?"
    decision, second, _ = merge_one(ISSUES, first, update("- Is the cache stale?"))
    assert (decision.reason, second) == (Reason.ACCEPTED, "- Is the cache stale?")
    assert first.count(RESTORED) == 1


def test_restored_items_are_listed_in_the_details() -> None:
    decision, _, _ = merge_one(ISSUES, "- a question\n- A QUESTION", update("- x"))
    assert decision.details == {"restored": [f"{RESTORED} a question"]}


def test_the_snippet_is_the_first_forty_characters() -> None:
    item = "Decide whether the archive worker should retry on 409 conflicts"
    decision, _, _ = merge_one(ISSUES, f"- {item}", update(f"- {item[:40]}... (trimmed)"))
    assert decision.reason is Reason.ACCEPTED
