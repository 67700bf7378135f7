"""Guard C, Task & Goals: constraint retention (DESIGN 3.5 C, 3.7 "Task & Goals")."""

from __future__ import annotations

import pytest

from app.wm.guards import is_constraint
from app.wm.ops import OpKind
from app.wm.reasons import Guard, Reason
from app.wm.sections import Section
from tests.wm.helpers import Op, append, bullets, keep, merge_one, update

TASKS = Section.TASK_AND_GOALS


@pytest.mark.parametrize(
    ("item", "constraint"),
    [
        ("You must not push to main", True),
        ("Never use tabs", True),
        ("Always run the tests", True),
        ("Don't touch the schema", True),
        ("Don’t touch the schema", True),
        ("do not rename files", True),
        ("Do   not rename files", True),
        ("Use only the standard library", True),
        ("This requires a review", True),
        ("A review is required", True),
        ("Migrations require SQL", True),
        ("Approval was required", True),
        ("Policy forbids force-push", True),
        ("Direct SQL is forbidden", True),
        ("We no longer support 3.9", True),
        ("User prefers short answers", True),
        ("Preferred editor: vim", True),
        ("Use httpx instead of requests", True),
        ("Avoid global state", True),
        ("It avoids surprises", True),
        ("Add mustard to the list", False),
        ("A lonely function", False),
        ("Forbidding tone", False),
        ("Write a parser", False),
        ("不要使用全局变量", True),
        ("必须写测试", True),
        ("禁止直接提交", True),
        ("务必保持简洁", True),
        ("只能用标准库", True),
        ("只用英文回答", True),
        ("不许修改接口", True),
        ("写一个解析器", False),
        ("[lifted] Never use tabs", False),
        ("[done] Always run the tests", False),
        ("[kept constraint] Never use tabs", True),
        ("[resolved] Never use tabs", True),
    ],
)
def test_constraint_items_in_english_and_chinese(item: str, constraint: bool) -> None:
    assert is_constraint(item) is constraint


@pytest.mark.parametrize(
    ("prior", "op", "applied", "body", "reason"),
    [
        (
            "- Never use tabs\n- Write a parser",
            update("- Write a parser v2"),
            OpKind.UPDATE,
            "- Write a parser v2\n- [kept constraint] Never use tabs",
            Reason.CONSTRAINT_RESTORED,
        ),
        (
            "- Never use tabs\n- Write a parser",
            update("- never use TABS\n- done"),
            OpKind.UPDATE,
            "- never use TABS\n- done",
            Reason.ACCEPTED,
        ),
        (
            "- 不要使用全局变量\n- 写一个解析器",
            update("- 写解析器"),
            OpKind.UPDATE,
            "- 写解析器\n- [kept constraint] 不要使用全局变量",
            Reason.CONSTRAINT_RESTORED,
        ),
        # Lifted and done constraints may be dropped.
        (
            "- [lifted] Never use tabs\n- [done] Always lint",
            update("- new goal"),
            OpKind.UPDATE,
            "- new goal",
            Reason.ACCEPTED,
        ),
        # Keeping the text but dropping the marker still counts as kept.
        (
            "- [kept constraint] Never use tabs",
            update("- Never use tabs"),
            OpKind.UPDATE,
            "- Never use tabs",
            Reason.ACCEPTED,
        ),
        # A restored constraint is restored again, every time, without doubling its marker.
        (
            "- [kept constraint] Never use tabs",
            update("- other"),
            OpKind.UPDATE,
            "- other\n- [kept constraint] Never use tabs",
            Reason.CONSTRAINT_RESTORED,
        ),
        # An empty UPDATE keeps only the restored constraints.
        (
            "- Never use tabs\n- Write a parser",
            update(""),
            OpKind.UPDATE,
            "- [kept constraint] Never use tabs",
            Reason.CONSTRAINT_RESTORED,
        ),
        # Withdrawing a constraint means keeping it marked [lifted].
        (
            "- Never use tabs",
            update("- [lifted] Never use tabs"),
            OpKind.UPDATE,
            "- [lifted] Never use tabs",
            Reason.ACCEPTED,
        ),
        ("- Never use tabs", keep(), OpKind.KEEP, "- Never use tabs", Reason.ACCEPTED),
        (
            "- Never use tabs",
            append("Ship it"),
            OpKind.APPEND,
            "- Never use tabs\n- Ship it",
            Reason.ACCEPTED,
        ),
    ],
)
def test_task_guard(prior: str, op: Op, applied: OpKind, body: str, reason: Reason) -> None:
    decision, result, _ = merge_one(TASKS, prior, op)
    assert (decision.applied, result, decision.reason) == (applied, body, reason)
    assert decision.guard is Guard.CONSTRAINT_RETENTION


def test_restoring_never_duplicates_a_constraint() -> None:
    prior = bullets(["Never use tabs", "never use TABS", "Only use pytest"])
    decision, body, _ = merge_one(TASKS, prior, update("- something else"))
    assert body == (
        "- something else\n- [kept constraint] Never use tabs\n- [kept constraint] Only use pytest"
    )
    assert decision.details == {
        "restored": ["[kept constraint] Never use tabs", "[kept constraint] Only use pytest"]
    }


def test_the_snippet_is_the_first_forty_characters() -> None:
    item = "Never deploy on Fridays without a rollback plan and a second reviewer present"
    decision, _, _ = merge_one(TASKS, f"- {item}", update(f"- {item[:40]} (shortened)"))
    assert decision.reason is Reason.ACCEPTED
    decision, _, _ = merge_one(TASKS, f"- {item}", update(f"- {item[:39]}"))
    assert decision.reason is Reason.CONSTRAINT_RESTORED
