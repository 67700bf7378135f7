"""Provenance: every item's sources through reading, carrying over, merging, and the unsourced
constraint rule (DESIGN 18), as tables at the edges of each rule."""

from __future__ import annotations

from typing import Any

import pytest

from app.wm.authority import constraint_evidence
from app.wm.extractor import extract
from app.wm.merge import merge
from app.wm.ops import KEEP, append, update
from app.wm.provenance import (
    ItemSource,
    Provenance,
    attribute,
    cited_markdown,
    mark_tool_output,
    read_references,
    source_key,
    sources_from_json,
)
from app.wm.reasons import Guard, Reason
from app.wm.references import SeqRange
from app.wm.sections import SECTIONS, Section
from app.wm.trust import mark_unsourced
from tests.wm.helpers import append as append_op
from tests.wm.helpers import ops_for, words
from tests.wm.helpers import update as update_op

COVERED = SeqRange(1, 30)
TASK = Section.TASK_AND_GOALS


def test_source_key_ignores_bullets_markers_and_case() -> None:
    assert source_key("- [resolved] Is a migration  needed?") == source_key("is a migration needed")


# --- reading references out of an op --------------------------------------------------------


def test_read_references_of_an_update_strips_every_line_and_keeps_the_rest() -> None:
    read = read_references(
        update("### Flights\n- Never fly at night (#3)\n\n  - nested (#4, #50)\n- (#5)\nplain"),
        COVERED,
    )
    assert read.op == update("### Flights\n- Never fly at night\n\n  - nested\nplain")
    assert read.cited == {"never fly at night": (3,), "nested": (4,)}
    assert read.outside == (50,)


def test_read_references_of_an_append_drops_items_that_were_only_a_reference() -> None:
    read = read_references(append(["Use tabs (#2)", "(#3)", "Use tabs (#9)"]), COVERED)
    assert read.op == append(["Use tabs", "Use tabs"])
    assert read.cited == {"use tabs": (2, 9)}
    assert read.outside == ()


def test_read_references_leaves_keep_alone() -> None:
    assert read_references(KEEP, COVERED).op == KEEP


# --- attribution ------------------------------------------------------------------------------

PRIOR_FACTS = (
    ItemSource("Flight UA123 departs 2024-05-20", (3,)),
    ItemSource("Hotel Maple Inn booked for 3 nights because of the conference", (5, 6)),
    ItemSource("Lunch was nice", (8,)),
)

# (body, cited for it, expected seqs per item)
ATTRIBUTIONS: list[tuple[str, dict[str, tuple[int, ...]], list[tuple[int, ...]]]] = [
    # kept items keep their sources; cited ones add to them
    (
        "- Flight UA123 departs 2024-05-20\n- Lunch was nice",
        {"lunch was nice": (9,)},
        [(3,), (8, 9)],
    ),
    # a marker does not make another item
    ("- [resolved] Lunch was nice", {}, [(8,)]),
    # packed: every prior item whose first 40 characters the line holds
    (
        "- Flight UA123 departs 2024-05-20 | Lunch was nice",
        {},
        [(3, 8)],
    ),
    # folded into anchors: at least half of the prior item's anchors (Flight, 2024-05-20)
    ("- Earlier facts: 2024-05-20", {}, [(3,)]),
    # below half of the anchors (Maple, Inn, 3 nights, because: one of four is not half)
    ("- Earlier facts: Maple", {}, [()]),
    # exactly half of the anchors
    ("- Earlier facts: Maple Inn", {}, [(5, 6)]),
    # anchors spread over several lines: together at least half, so each line that holds one
    (
        "- Earlier facts: Hotel\n- Earlier facts: Maple\n- Lunch was nice",
        {},
        [(5, 6), (5, 6), (8,)],
    ),
    # a new item that absorbed nothing has only what was cited
    ("- Dinner at 7 pm", {"dinner at 7 pm": (11,)}, [(11,)]),
]


@pytest.mark.parametrize(("body", "cited", "expected"), ATTRIBUTIONS)
def test_attribute(
    body: str, cited: dict[str, tuple[int, ...]], expected: list[tuple[int, ...]]
) -> None:
    assert [entry.seqs for entry in attribute(body, cited, PRIOR_FACTS)] == expected


def test_a_prior_item_without_sources_is_never_looked_for() -> None:
    found = attribute("- something else", {}, (ItemSource("something", ()),))
    assert found == (ItemSource("something else", ()),)


def test_tool_output_is_marked_and_headings_and_blank_lines_pass_through() -> None:
    sources = (ItemSource("Build failed", (3,), authority=("tool",)), ItemSource("Use tabs", (2,)))
    body, marked = mark_tool_output("### Build\n\n- Build failed\n- Use tabs", sources)
    assert body == "### Build\n\n- [from a tool result] Build failed\n- Use tabs"
    assert marked == (
        ItemSource("[from a tool result] Build failed", (3,), authority=("tool",)),
        sources[1],
    )


def test_a_prior_item_without_anchors_is_absorbed_by_its_first_characters_only() -> None:
    prior = (ItemSource("the cat sat on the mat", (4,)), ItemSource("a dog ran off", (5,)))
    found = attribute("- the cat sat on the mat, then the dog left", {}, prior)
    assert found == (ItemSource("the cat sat on the mat, then the dog left", (4,)),)


# --- the unsourced-constraint rule ------------------------------------------------------------


def _checked(
    body: str,
    cited: dict[str, tuple[int, ...]],
    *,
    prior_body: str = "",
    prior: tuple[ItemSource, ...] = (),
    evidence: dict[int, str] | None = None,
) -> tuple[str, list[str], list[tuple[int, ...]]]:
    if evidence is None:
        evidence = {
            4: "i said: never push to main on a friday",
            7: "fridays: we never deploy then, and we keep python 3.8 support.",
        }
    sources = attribute(body, cited, prior)
    result = mark_unsourced(body, sources, prior_body, prior, evidence)
    marked = [item for items in result.marked.values() for item in items]
    return result.body, marked, [entry.evidence for entry in result.sources]


UNSOURCED_CASES: list[tuple[str, dict[str, tuple[int, ...]], str, list[tuple[int, ...]]]] = [
    # a constraint citing a user message that says it: kept, with its evidence
    ("- Never deploy on Fridays", {"never deploy on fridays": (7,)}, "", [(7,)]),
    # citing a user message that states some other constraint: not supported
    (
        "- Never deploy on Fridays",
        {"never deploy on fridays": (4,)},
        "[unsourced] Never deploy on Fridays",
        [()],
    ),
    # the opposite of what the cited message says
    (
        "- Always deploy on Fridays",
        {"always deploy on fridays": (7,)},
        "[contradicts source] Always deploy on Fridays",
        [()],
    ),
    # citing only messages that state none, or nothing at all: marked
    (
        "- Never deploy on Fridays",
        {"never deploy on fridays": (5, 6)},
        "[unsourced] Never deploy on Fridays",
        [()],
    ),
    ("- Always use tabs", {}, "[unsourced] Always use tabs", [()]),
    # not a constraint: never marked
    ("- Write the release notes", {}, "", [()]),
    # lifted or done: not a constraint any more
    ("- [lifted] Never deploy on Fridays", {}, "", [()]),
    # a fake restoration marker is no shield
    ("- [kept constraint] Always use tabs", {}, "[unsourced] Always use tabs", [()]),
    # uncited, but quoting a user message that states a constraint, word for word
    ("- Never push to main on a Friday.", {}, "", [(4,)]),
    ("- never push to main", {}, "", [(4,)]),
    # a quote of two words is not enough to tell who said it
    ("- never push", {}, "[unsourced] never push", [()]),
]


@pytest.mark.parametrize(("body", "cited", "marked", "evidence"), UNSOURCED_CASES)
def test_mark_unsourced(
    body: str, cited: dict[str, tuple[int, ...]], marked: str, evidence: list[tuple[int, ...]]
) -> None:
    new_body, found, kept = _checked(body, cited)
    assert found == ([marked] if marked else [])
    assert new_body == (f"- {marked}" if marked else body)
    assert kept == evidence


# The quoting message is seq 4: a batch ending before it has not read it yet.
@pytest.mark.parametrize(
    ("upto", "marked", "evidence"),
    [
        (3, "[unsourced] Never push to main on a Friday.", [()]),
        (4, "", [(4,)]),
        (5, "", [(4,)]),
        (None, "", [(4,)]),
    ],
)
def test_a_quote_counts_from_the_batch_that_covers_the_message_quoted(
    upto: int | None, marked: str, evidence: list[tuple[int, ...]]
) -> None:
    body = "- Never push to main on a Friday."
    messages = {4: "i said: never push to main on a friday"}
    result = mark_unsourced(body, attribute(body, {}, ()), "", (), messages, upto=upto)
    found = [item for items in result.marked.values() for item in items]
    assert found == ([marked] if marked else [])
    assert [entry.evidence for entry in result.sources] == evidence


def test_a_batch_is_judged_on_the_messages_up_to_its_last() -> None:
    """Through the merge: the batch's reference range bounds what a constraint may quote."""
    ops = {
        "sections": {"Task & Goals": {"op": "APPEND", "items": ["Never push to main on a Friday."]}}
    }
    evidence = {4: "i said: never push to main on a friday"}
    checked = [
        merge(
            dict.fromkeys(SECTIONS, ""),
            ops,
            provenance=Provenance(SeqRange(1, last), cited={}, evidence=evidence),
        ).sections[Section.TASK_AND_GOALS]
        for last in (3, 4)
    ]
    assert checked == [
        "- [unsourced] Never push to main on a Friday.",
        "- Never push to main on a Friday.",
    ]


def test_a_constraint_of_the_prior_is_carried_even_without_evidence() -> None:
    # Imported or older constraints have no sources: guard C keeps them, so does this rule.
    body, marked, _ = _checked(
        "- Never use the prod database\n- [kept constraint] Always use tabs",
        {},
        prior_body="- Never use the prod database\n- Always use tabs",
    )
    assert marked == []
    assert body == "- Never use the prod database\n- [kept constraint] Always use tabs"


def test_a_marked_constraint_written_again_without_its_marker_is_marked_again() -> None:
    prior = (ItemSource("[unsourced] Always use tabs", (6,)),)
    body, marked, _ = _checked(
        "- Always use tabs", {}, prior_body="- [unsourced] Always use tabs", prior=prior
    )
    assert marked == ["[unsourced] Always use tabs"]
    assert body == "- [unsourced] Always use tabs"


def test_a_lifted_constraint_reinstated_without_the_users_words_is_unsourced() -> None:
    _, marked, _ = _checked(
        "- Never deploy on Fridays", {}, prior_body="- [lifted] Never deploy on Fridays"
    )
    assert marked == ["[unsourced] Never deploy on Fridays"]


def test_the_evidence_of_the_prior_counts_for_a_rephrased_constraint() -> None:
    """A message of an earlier archive is read through the prior constraint it is evidence of:
    a rephrasing that holds its words is the user's; an item that only cites it is not."""
    prior = (ItemSource("Never deploy on Fridays", (2, 3), (2,)),)
    _, marked, evidence = _checked(
        "- Do not deploy anything on Fridays",
        {"do not deploy anything on fridays": (2,)},
        prior_body="- Never deploy on Fridays",
        prior=prior,
        evidence={},
    )
    assert marked == []
    assert evidence == [(2,)]
    _, marked, _ = _checked(
        "- Always route payments through escrow",
        {"always route payments through escrow": (2,)},
        prior_body="- Never deploy on Fridays",
        prior=prior,
        evidence={},
    )
    assert marked == ["[unsourced] Always route payments through escrow"]


def test_headings_and_blank_lines_pass_through() -> None:
    body = "### Rules\n\n- Never deploy on Fridays"
    new_body, marked, _ = _checked(body, {"never deploy on fridays": (7,)})
    assert (new_body, marked) == (body, [])


# --- evidence, stored sources, prompts ----------------------------------------------------


def test_constraint_evidence_is_user_and_system_messages_with_a_keyword() -> None:
    messages: list[Any] = [
        {"role": "user", "content": "Never touch  *prod*."},
        {"role": "assistant", "content": "I will never touch prod."},
        {"role": "user", "content": "Thanks."},
        {"role": "user", "content": [{"type": "text", "text": "不要用 pip"}]},
        {"role": "system", "content": "Policy: do not refund basic economy."},
        {"role": "tool", "tool_call_id": "c", "content": "You must always refund."},
        {"role": "developer", "content": "Never answer in French."},
        {"role": "robot", "content": "Never stop."},
    ]
    assert constraint_evidence(messages, first_seq=10) == {
        10: "never touch *prod",
        13: "不要用 pip",
        14: "policy: do not refund basic economy",
        16: "never answer in french",
        17: "never stop",  # an unknown role is read as the user's
    }


def test_sources_round_trip_through_json_and_bad_entries_are_skipped() -> None:
    entries = (ItemSource("a", (1, 2)), ItemSource("b", (3,), (3,)))
    stored = [entry.as_json() for entry in entries]
    assert stored[1] == {"item": "b", "seqs": [3], "evidence": [3]}
    assert sources_from_json(
        [*stored, "x", {"item": 3}, {"item": "c", "seqs": [True, "2", 4]}]
    ) == (
        *entries,
        ItemSource("c", (4,)),
    )
    assert sources_from_json({"not": "a list"}) == ()
    assert sources_from_json([{"item": "d", "seqs": "1"}]) == (ItemSource("d", ()),)


def test_cited_markdown_writes_each_items_reference() -> None:
    bodies = {Section.KEY_FACTS: "### Trip\n- Flight UA123\n- Lunch", TASK: "- Use tabs"}
    sources = {Section.KEY_FACTS: (ItemSource("Flight UA123", (3, 4)), ItemSource("Lunch", ()))}
    cited = cited_markdown(bodies, sources)
    assert cited[Section.KEY_FACTS] == "### Trip\n- Flight UA123 (#3, #4)\n- Lunch"
    assert cited[TASK] == "- Use tabs"
    assert cited[Section.FILES] == ""


# --- through the merge ------------------------------------------------------------------------


def _provenance(**changes: Any) -> Provenance:
    return Provenance(COVERED, **changes)


def test_without_provenance_the_merge_records_no_sources() -> None:
    result = merge({}, ops_for(TASK, append_op("Never use pip (#1)")), counter=words)
    assert result.sources == {}
    assert result.sections[TASK] == "- Never use pip (#1)"


def test_an_update_that_merges_items_keeps_the_union_of_their_sources() -> None:
    prior = {Section.KEY_FACTS: "- Flight UA123 departs 2024-05-20\n- Hotel Maple Inn, 3 nights"}
    sources = {
        Section.KEY_FACTS: (
            ItemSource("Flight UA123 departs 2024-05-20", (3,)),
            ItemSource("Hotel Maple Inn, 3 nights", (7,)),
        )
    }
    result = merge(
        prior,
        ops_for(
            Section.KEY_FACTS,
            update_op("- Flight UA123 departs 2024-05-20; Hotel Maple Inn, 3 nights (#9)"),
        ),
        counter=words,
        provenance=_provenance(prior=sources),
    )
    assert result.sources[Section.KEY_FACTS] == (
        ItemSource("Flight UA123 departs 2024-05-20; Hotel Maple Inn, 3 nights", (3, 7, 9)),
    )
    assert result.to_dict()["sources"]["Key Facts & Decisions"] == [  # type: ignore[index]
        {"item": "Flight UA123 departs 2024-05-20; Hotel Maple Inn, 3 nights", "seqs": [3, 7, 9]}
    ]


def test_references_outside_the_range_are_reported_in_the_decision() -> None:
    result = merge(
        {},
        ops_for(Section.KEY_FACTS, append_op("Use Postgres 16 (#2, #31)")),
        counter=words,
        provenance=_provenance(),
    )
    decision = result.decision(Section.KEY_FACTS)
    assert decision.details["references_outside_range"] == [31]
    assert result.sections[Section.KEY_FACTS] == "- Use Postgres 16"
    assert result.sources[Section.KEY_FACTS] == (ItemSource("Use Postgres 16", (2,)),)


def test_an_invented_constraint_is_marked_and_reported_beside_a_restoration() -> None:
    prior = {TASK: "- Never use pip"}
    result = merge(
        prior,
        ops_for(TASK, update_op("- Always deploy on Fridays (#5)")),
        counter=words,
        provenance=_provenance(evidence={2: "never use pip"}),
    )
    decision = result.decision(TASK)
    assert decision.reason is Reason.UNSOURCED_CONSTRAINT
    assert decision.guard is Guard.CONSTRAINT_RETENTION
    assert decision.details["unsourced"] == ["[unsourced] Always deploy on Fridays"]
    assert decision.details["restored"] == ["[kept constraint] Never use pip"]
    assert result.sections[TASK] == (
        "- [unsourced] Always deploy on Fridays\n- [kept constraint] Never use pip"
    )


def test_the_first_working_memory_is_checked_too() -> None:
    result = merge(
        {},
        ops_for(TASK, append_op("Only book refundable fares")),
        counter=words,
        provenance=_provenance(),
    )
    assert result.decision(TASK).reason is Reason.UNSOURCED_CONSTRAINT
    assert result.decision(TASK).guard is Guard.CONSTRAINT_RETENTION


def test_unrecoverable_arguments_keep_the_priors_sources() -> None:
    prior = {TASK: "- Never use pip", Section.FILES: "- app/main.py"}
    sources = {
        TASK: (ItemSource("Never use pip", (2,), (2,)),),
        Section.FILES: (ItemSource("app/main.py", (3,)),),
    }
    result = merge(prior, "not arguments", counter=words, provenance=_provenance(prior=sources))
    assert result.sources[TASK] == sources[TASK]
    assert result.sources[Section.FILES] == sources[Section.FILES]
    assert all(d.reason is Reason.UNRECOVERABLE_ARGUMENTS for d in result.decisions)


def test_the_extractor_cites_its_messages_and_the_merge_takes_them_as_they_are() -> None:
    messages = [
        {"role": "user", "content": "Fix the crash in app/models/user.py. Never touch prod."},
        {"role": "assistant", "content": "Traceback ends in KeyError: email. I will add it."},
        {"role": "user", "content": "Good. Is a migration needed?"},
    ]
    extraction = extract(messages, first_seq=21)
    result = merge(
        {},
        extraction.ops,
        counter=words,
        provenance=Provenance(
            SeqRange(1, 23), cited=extraction.cited, evidence=constraint_evidence(messages, 21)
        ),
    )
    by_item = {entry.item: entry.seqs for section in SECTIONS for entry in result.sources[section]}
    assert by_item["Never touch prod."] == (21,)
    assert by_item["app/models/user.py (mentioned by User)"] == (21,)
    assert by_item["Assistant reported: Traceback ends in KeyError: email."] == (22,)
    assert by_item["Question from User: Is a migration needed?"] == (23,)
    assert result.sources[TASK][1].evidence == (21,)
    assert all(d.reason is not Reason.UNSOURCED_CONSTRAINT for d in result.decisions)


def test_the_extractors_items_are_never_read_for_references() -> None:
    # A user's own "(#1234)" (a pull request, say) is text when the extractor quotes it.
    messages = [{"role": "user", "content": "Never revert the fix of (#12)"}]
    extraction = extract(messages)
    result = merge(
        {},
        extraction.ops,
        counter=words,
        provenance=Provenance(
            SeqRange(1, 1), cited=extraction.cited, evidence=constraint_evidence(messages, 1)
        ),
    )
    assert "Never revert the fix of (#12)" in result.sections[TASK]
