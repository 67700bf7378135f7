"""The merge (DESIGN 3.4) and the edge cases of 3.7 that are not a single guard's."""

from __future__ import annotations

import json

import pytest

from app.wm.merge import MergeResult, creation_ops, keep_all, merge
from app.wm.ops import OpKind
from app.wm.reasons import Reason
from app.wm.sections import SECTIONS, Section, empty_sections, parse, render
from tests.wm.helpers import append, keep, merge_one, ops_for, update, words

STATE = Section.CURRENT_STATE


def test_one_decision_per_section_in_order() -> None:
    result = merge(empty_sections(), ops_for(STATE, update("Working.")), counter=words)
    assert [decision.section for decision in result.decisions] == list(SECTIONS)
    assert list(result.sections) == list(SECTIONS)
    assert result.decision(STATE).applied is OpKind.UPDATE
    assert result.markdown == render(result.sections)


@pytest.mark.parametrize(
    ("prior", "op", "applied", "body", "reason"),
    [
        ("Old state.", update("New state."), OpKind.UPDATE, "New state.", Reason.ACCEPTED),
        ("Old state.", update("  "), OpKind.UPDATE, "", Reason.ACCEPTED),
        ("Old state.", keep(), OpKind.KEEP, "Old state.", Reason.ACCEPTED),
        (
            "Old state.",
            append("Next: tests"),
            OpKind.APPEND,
            "Old state.\n- Next: tests",
            Reason.ACCEPTED,
        ),
        (
            "",
            append("a", "A.", "b\nc", 7, 2.5, True, None),
            OpKind.APPEND,
            "- a\n- b\n- c\n- 7\n- 2.5",
            Reason.ACCEPTED,
        ),
        ("- a", append("**A**", " "), OpKind.KEEP, "- a", Reason.NOTHING_NEW),
        ("  padded  \n", keep(), OpKind.KEEP, "padded", Reason.ACCEPTED),
    ],
)
def test_current_state_is_unguarded(
    prior: str, op: object, applied: OpKind, body: str, reason: Reason
) -> None:
    decision, result, _ = merge_one(STATE, prior, op)
    assert (decision.applied, result, decision.reason, decision.guard) == (
        applied,
        body,
        reason,
        None,
    )


@pytest.mark.parametrize(
    ("op", "reason", "problem"),
    [
        ({"op": "DELETE"}, Reason.INVALID_OP, "unknown op 'DELETE'"),
        ("KEEP", Reason.INVALID_OP, "the op is not an object"),
        ({"op": "UPDATE", "content": 3}, Reason.INVALID_OP, "UPDATE without a string content"),
        ({"op": "APPEND", "items": {"a": 1}}, Reason.INVALID_OP, "APPEND without a list of items"),
        ({"op": "APPEND", "items": None}, Reason.INVALID_OP, "APPEND without a list of items"),
    ],
)
def test_invalid_ops_keep_the_section(op: object, reason: Reason, problem: str) -> None:
    decision, body, _ = merge_one(STATE, "Old.", op)
    assert (decision.requested, decision.applied, decision.reason) == (None, OpKind.KEEP, reason)
    assert body == "Old."
    assert decision.details["problem"] == problem
    assert "schema_violation" in decision.details


def test_missing_sections_keep_and_say_so() -> None:
    result = merge({STATE: "Old."}, {"sections": {"Open Issues": keep()}}, counter=words)
    decision = result.decision(STATE)
    assert (decision.applied, decision.reason) == (OpKind.KEEP, Reason.MISSING_OP)
    assert decision.details == {"schema_violation": "'Current State' is a required property"}
    assert result.sections[STATE] == "Old."


def test_lenient_arguments_record_the_schema_violation() -> None:
    arguments = {
        "current state": {"op": "update", "content": "New.", "reasoning": "ignored"},
        "Open Issues": {"op": "APPEND", "items": "one question?"},
    }
    result = merge({}, arguments, counter=words)
    assert result.sections[STATE] == "New."
    assert result.sections[Section.OPEN_ISSUES] == "- one question?"
    assert result.decision(STATE).details["schema_violation"]
    assert result.decision(Section.SESSION_TITLE).reason is Reason.MISSING_OP


@pytest.mark.parametrize("arguments", [None, [], "text", 3, {"sections": []}])
def test_arguments_that_are_not_an_object_keep_everything_as_unrecoverable(
    arguments: object,
) -> None:
    prior = {section: f"- {section.value}" for section in SECTIONS}
    result = merge(prior, arguments, counter=words)
    assert result.sections == prior
    assert all(d.reason is Reason.UNRECOVERABLE_ARGUMENTS for d in result.decisions)


def test_valid_arguments_have_no_schema_violation() -> None:
    result = merge({}, ops_for(STATE, update("x")), counter=words)
    assert all("schema_violation" not in d.details for d in result.decisions)


def test_the_result_is_easy_to_store() -> None:
    prior = {Section.OPEN_ISSUES: "- q1\n- q2", STATE: "Now."}
    result = merge(prior, ops_for(STATE, update("one two three")), counter=words)
    assert result.item_counts[Section.OPEN_ISSUES] == 2
    assert result.item_counts[STATE] == 1
    assert result.token_counts[STATE] == 3
    assert result.token_counts[Section.OPEN_ISSUES] == 4
    assert result.token_counts[Section.FILES] == 0
    assert result.total_tokens == 7
    stored = result.to_dict()
    assert json.loads(json.dumps(stored)) == stored
    assert stored["sections"] == {section.value: result.sections[section] for section in SECTIONS}
    assert stored["decisions"][1] == {  # type: ignore[index]
        "section": "Current State",
        "requested": "UPDATE",
        "applied": "UPDATE",
        "guard": None,
        "reason": "accepted",
        "details": {},
    }
    assert stored["token_counts"]["Current State"] == 3  # type: ignore[index]
    assert stored["item_counts"]["Open Issues"] == 2  # type: ignore[index]


def test_token_counts_are_computed_once() -> None:
    calls: list[str] = []

    def counting(text: str) -> int:
        calls.append(text)
        return 1

    result = merge({STATE: "x"}, {}, counter=counting)
    assert calls == []
    assert result.total_tokens == 1
    assert result.total_tokens == 1
    assert calls == ["x"]


def test_keep_all_keeps_the_prior_for_unrecoverable_arguments() -> None:
    prior = {STATE: " Now. ", Section.OPEN_ISSUES: "- q"}
    result = keep_all(prior, counter=words)
    assert result.sections[STATE] == "Now."
    assert all(
        (d.requested, d.applied, d.guard, d.reason)
        == (None, OpKind.KEEP, None, Reason.UNRECOVERABLE_ARGUMENTS)
        for d in result.decisions
    )


def test_a_created_document_goes_through_the_same_merge() -> None:
    created = parse(
        "Some preamble\n# Working Memory\n## Session Title\nNew title\n"
        "## Key Facts & Decisions\n- fact\n## Open Issues\n\n## Notes\nextra"
    )
    arguments = creation_ops(created)
    assert arguments["sections"] == {
        "Session Title": {"op": "UPDATE", "content": "New title"},
        "Current State": {"op": "KEEP"},
        "Task & Goals": {"op": "KEEP"},
        "Key Facts & Decisions": {"op": "UPDATE", "content": "- fact"},
        "Files & Context": {"op": "KEEP"},
        "Errors & Corrections": {"op": "KEEP"},
        "Open Issues": {"op": "KEEP"},
    }
    first = merge(empty_sections(), arguments, counter=words)
    assert first.sections[Section.SESSION_TITLE] == "New title"
    # Against a prior, the guards still protect it and empty sections do not blank it.
    prior = {Section.OPEN_ISSUES: "- still open?", Section.SESSION_TITLE: "Old subject"}
    later: MergeResult = merge(prior, arguments, counter=words)
    assert later.sections[Section.OPEN_ISSUES] == "- still open?"
    assert later.sections[Section.SESSION_TITLE] == "Old subject"
    assert later.decision(Section.SESSION_TITLE).reason is Reason.TITLE_NO_OVERLAP
