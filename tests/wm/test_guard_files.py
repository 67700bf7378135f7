"""Guard D, Files & Context: no path regression (DESIGN 3.5 D, 3.7 "Files")."""

from __future__ import annotations

import pytest

from app.wm.ops import OpKind
from app.wm.reasons import Guard, Reason
from app.wm.sections import Section
from tests.wm.helpers import Op, append, keep, merge_one, update

FILES = Section.FILES


@pytest.mark.parametrize(
    "form",
    [
        "app/main.py",
        "main.py",
        "a/b",
        "app/sessions/service",
        "https://github.com/org/repo/blob/main/src/app.py",
        r"C:\Users\me\app.py",
        "/usr/local/bin",
        "~/.config/tool",
        "config.YAML",
        "script.ps1",
    ],
)
def test_losing_any_path_form_is_rejected(form: str) -> None:
    prior = f"- {form} (entry point)\n- notes.md"
    decision, body, _ = merge_one(FILES, prior, update("- notes.md"))
    assert (decision.applied, decision.reason, body) == (
        OpKind.KEEP,
        Reason.FILES_PATH_REGRESSION,
        prior,
    )
    assert decision.guard is Guard.NO_PATH_REGRESSION
    assert len(decision.details["lost_paths"]) == 1  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("prior", "content"),
    [
        ("- compiled file.pyc", "- nothing"),  # file.pyc is not file.py
        ("- ./src/app.py", "- src/app.py"),  # a leading ./ does not matter
        ("- the repo", "- the repo and its wiki"),
        ("- https://example.com/docs", "- the docs"),  # a one-segment URL path is no path
    ],
)
def test_updates_that_lose_no_path_pass(prior: str, content: str) -> None:
    decision, body, _ = merge_one(FILES, prior, update(content))
    assert (decision.applied, decision.reason, body) == (OpKind.UPDATE, Reason.ACCEPTED, content)


def test_new_paths_of_a_rejected_update_become_an_append_in_order() -> None:
    prior = "- app/main.py entry point"
    content = (
        "### Layout\n"
        "- see tests/wm/test_merge.py and app/wm/merge.py for the core\n"
        "- app/wm/merge.py is pure\n"
        "## docs/guide.md\n"
        "other text"
    )
    decision, body, _ = merge_one(FILES, prior, update(content))
    assert (decision.applied, decision.reason) == (OpKind.APPEND, Reason.FILES_PATH_REGRESSION)
    assert body == (
        "- app/main.py entry point\n"
        "- see tests/wm/test_merge.py and app/wm/merge.py for the core\n"
        "- docs/guide.md (newly referenced)"
    )
    assert decision.details == {
        "lost_paths": ["app/main.py"],
        "added_paths": ["tests/wm/test_merge.py", "app/wm/merge.py", "docs/guide.md"],
    }


def test_a_new_path_already_mentioned_in_the_prior_body_adds_nothing() -> None:
    prior = "- app/main.py\n- see docs/guide.md"
    decision, body, _ = merge_one(FILES, prior, update("- see docs/guide.md\n- docs/guide.md"))
    assert (decision.applied, decision.reason, body) == (
        OpKind.KEEP,
        Reason.FILES_PATH_REGRESSION,
        prior,
    )


def test_a_path_only_new_by_line_is_kept_once() -> None:
    prior = "- app/main.py\n- old.py"
    decision, body, _ = merge_one(FILES, prior, update("- app/main.py and new.py"))
    assert body == "- app/main.py\n- old.py\n- app/main.py and new.py"
    assert decision.details["added_paths"] == ["new.py"]


@pytest.mark.parametrize("op", [keep(), append("docs/new.md")])
def test_keep_and_append_pass(op: Op) -> None:
    decision, _, _ = merge_one(FILES, "- app/main.py", op)
    assert decision.reason is Reason.ACCEPTED
