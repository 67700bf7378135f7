"""Guard A, Session Title: stability (DESIGN 3.5 A, 3.7 "Session Title")."""

from __future__ import annotations

import pytest

from app.wm.ops import OpKind
from app.wm.reasons import Guard, Reason
from app.wm.sections import Section
from tests.wm.helpers import Op, append, keep, merge_one, update

TITLE = Section.SESSION_TITLE


@pytest.mark.parametrize(
    ("prior", "op", "applied", "body", "reason"),
    [
        ("Fix login bug", keep(), OpKind.KEEP, "Fix login bug", Reason.ACCEPTED),
        ("Fix login bug", append("x"), OpKind.KEEP, "Fix login bug", Reason.TITLE_SINGLE_LINE),
        (
            "Fix login bug",
            update("Fix login bug in API"),
            OpKind.UPDATE,
            "Fix login bug in API",
            Reason.ACCEPTED,
        ),
        (
            "Fix login bug",
            update("Refactor payments"),
            OpKind.KEEP,
            "Fix login bug",
            Reason.TITLE_NO_OVERLAP,
        ),
        ("Fix login bug", update(""), OpKind.KEEP, "Fix login bug", Reason.TITLE_EMPTY),
        ("Fix login bug", update("  \n "), OpKind.KEEP, "Fix login bug", Reason.TITLE_EMPTY),
        # Stop-words never count as overlap.
        (
            "The session plan for Alpha",
            update("The session plan for Beta"),
            OpKind.KEEP,
            "The session plan for Alpha",
            Reason.TITLE_NO_OVERLAP,
        ),
        (
            "Working memory notes",
            update("Anything at all"),
            OpKind.UPDATE,
            "Anything at all",
            Reason.ACCEPTED,
        ),
        # Trailing punctuation is not part of a word.
        ("Setup.", update("setup finished"), OpKind.UPDATE, "setup finished", Reason.ACCEPTED),
        (
            "Deploy to node.js!",
            update("Node.js deployment"),
            OpKind.UPDATE,
            "Node.js deployment",
            Reason.ACCEPTED,
        ),
        # Digit runs are words; two-letter words are not.
        (
            "Python 3.11 upgrade",
            update("Move to 3.12"),
            OpKind.UPDATE,
            "Move to 3.12",
            Reason.ACCEPTED,
        ),
        ("Go DB fix", update("Go DB fix v2"), OpKind.UPDATE, "Go DB fix v2", Reason.ACCEPTED),
        ("Go DB", update("Go DB v2"), OpKind.UPDATE, "Go DB v2", Reason.ACCEPTED),
        # CJK: pairs of adjacent ideographs.
        (
            "修复登录问题",
            update("登录问题已修复"),
            OpKind.UPDATE,
            "登录问题已修复",
            Reason.ACCEPTED,
        ),
        ("修复登录问题", update("支付重构"), OpKind.KEEP, "修复登录问题", Reason.TITLE_NO_OVERLAP),
        ("修复 登录", update("修 复"), OpKind.KEEP, "修复 登录", Reason.TITLE_NO_OVERLAP),
        ("ログイン修正", update("ログイン改善"), OpKind.UPDATE, "ログイン改善", Reason.ACCEPTED),
    ],
)
def test_title_guard(prior: str, op: Op, applied: OpKind, body: str, reason: Reason) -> None:
    decision, result, _ = merge_one(TITLE, prior, op)
    assert (decision.applied, result, decision.reason) == (applied, body, reason)
    assert decision.guard is Guard.TITLE_STABILITY


def test_title_no_overlap_reports_the_old_words() -> None:
    decision, _, _ = merge_one(TITLE, "Fix login bug", update("Refactor payments"))
    assert decision.details == {"old_words": ["bug", "fix", "login"]}
    accepted, _, _ = merge_one(TITLE, "Fix login bug", update("login fix"))
    assert accepted.details == {"shared_words": ["fix", "login"]}


@pytest.mark.parametrize(
    ("op", "applied", "body", "reason", "guard"),
    [
        (
            append("First title", "Second"),
            OpKind.UPDATE,
            "First title",
            Reason.TITLE_SINGLE_LINE,
            Guard.TITLE_STABILITY,
        ),
        (
            append("- bullet title"),
            OpKind.UPDATE,
            "bullet title",
            Reason.TITLE_SINGLE_LINE,
            Guard.TITLE_STABILITY,
        ),
        (update(""), OpKind.KEEP, "", Reason.TITLE_EMPTY, Guard.TITLE_STABILITY),
        (update("  New title "), OpKind.UPDATE, "New title", Reason.ACCEPTED, None),
        (append(), OpKind.KEEP, "", Reason.NOTHING_NEW, None),
        (keep(), OpKind.KEEP, "", Reason.ACCEPTED, None),
    ],
)
def test_title_with_an_empty_prior(
    op: Op, applied: OpKind, body: str, reason: Reason, guard: Guard | None
) -> None:
    decision, result, _ = merge_one(TITLE, "", op)
    assert (decision.applied, result, decision.reason, decision.guard) == (
        applied,
        body,
        reason,
        guard,
    )
