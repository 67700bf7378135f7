"""DESIGN 3.6 and 3.7 "Recovery order", sentence by sentence: one table per sentence.

Each row is written from the rule: the raw string a model sent, and what the rule says comes out
(the path, and the ops or the document recovered). ``tests/wm/test_recovery.py`` holds the corpus
of damaged payloads; this file pins what counts as a success and what the text must be.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.wm.debug import merge_report
from app.wm.merge import merge
from app.wm.ops import OpKind
from app.wm.reasons import Reason
from app.wm.recovery import RecoveryPath, recover_arguments
from app.wm.sections import SECTIONS, parse
from tests.wm.helpers import words

P = RecoveryPath
KEEP: dict[str, Any] = {"op": "KEEP"}
TITLE: dict[str, Any] = {"op": "UPDATE", "content": "Fix the parser"}
ISSUE: dict[str, Any] = {"op": "APPEND", "items": ["Why does it fail?"]}
PAYLOAD: dict[str, Any] = {"sections": {"Session Title": TITLE, "Open Issues": ISSUE}}
ALL_STRINGS: dict[str, Any] = {"sections": {s.value: "KEEP" for s in SECTIONS}}


def outcome(raw: str) -> tuple[RecoveryPath, dict[str, object] | None]:
    """The path and the recovered sections, or None when nothing was recovered."""
    recovery = recover_arguments(raw)
    if recovery.arguments is None:
        return recovery.path, None
    sections = recovery.arguments["sections"]
    assert isinstance(sections, dict)
    return recovery.path, sections


# "A parse or repair counts as a success only if it yields an object in which at least one of the
# seven names maps to a well-formed op" ----------------------------------------------------------

NOT_A_SUCCESS: list[tuple[str, str]] = [
    ("sections is a string", '{"sections": "KEEP"}'),
    ("sections is a list", '{"sections": [{"op": "KEEP"}]}'),
    ("sections is a number", '{"sections": 7}'),
    ("sections is null", '{"sections": null}'),
    ("sections is empty", '{"sections": {}}'),
    ("an op given as a string", '{"sections": {"Open Issues": "none"}}'),
    ("every op given as a string", json.dumps(ALL_STRINGS)),
    ("ops as strings at the top level", '{"Open Issues": "none", "Session Title": "KEEP"}'),
    ("an op given as a list", '{"sections": {"Open Issues": ["a"]}}'),
    ("only unknown op names", '{"sections": {"Open Issues": {"op": "DROP"}}}'),
    ("UPDATE without content", '{"sections": {"Current State": {"op": "UPDATE"}}}'),
    ("repaired, and still no op", '{"sections": {"Open Issues": "none"},'),
    ("an empty object", "{}"),
    ("other names only", '{"notes": {"op": "KEEP"}}'),
    ("a wrapped string without a well-formed op",
     json.dumps({"tool_input": json.dumps({"sections": {"Open Issues": "none"}})})),
]  # fmt: skip


@pytest.mark.parametrize("raw", [pytest.param(raw, id=name) for name, raw in NOT_A_SUCCESS])
def test_without_a_well_formed_op_nothing_is_recovered(raw: str) -> None:
    assert outcome(raw) == (P.UNRECOVERABLE, None)


# "Nothing recovered → the service runs its fallback chain (4.3); workmem wm merge, which has no
# model, keeps the prior and gives every section's decision the reason unrecoverable_arguments" ----

PRIOR = "## Session Title\nFix the parser\n## Open Issues\n- Why does it fail?\n"
UNUSABLE: list[tuple[str, str]] = [
    *NOT_A_SUCCESS,
    ("not JSON", "not json at all"),
    ("a JSON array", "[1, 2]"),
    ("a JSON string", json.dumps("no ops")),
    ("a tool call whose arguments have no op", json.dumps({"function": {"arguments": {}}})),
    ("a tool call whose argument string has no op",
     json.dumps({"arguments": json.dumps({"sections": {"Open Issues": "none"}})})),
]  # fmt: skip


@pytest.mark.parametrize("ops_text", [pytest.param(raw, id=name) for name, raw in UNUSABLE])
def test_wm_merge_reports_unusable_arguments_as_unrecoverable(ops_text: str) -> None:
    report = merge_report(PRIOR, ops_text, counter=words)
    decisions = report["decisions"]
    assert isinstance(decisions, list)
    assert [d["reason"] for d in decisions] == ["unrecoverable_arguments"] * len(SECTIONS)
    assert [d["requested"] for d in decisions] == [None] * len(SECTIONS)
    assert report["sections"] == {s.value: body for s, body in parse(PRIOR).sections.items()}
    assert report["recovery"] == {"path": "unrecoverable", "scanned": []}


UNUSABLE_OBJECTS: list[tuple[str, object]] = [
    *((name, json.loads(raw)) for name, raw in NOT_A_SUCCESS if not raw.endswith(",")),
    ("null", None),
    ("a list", []),
    ("a string", "text"),
    ("a number", 3),
    ("sections is an empty list", {"sections": []}),
]


@pytest.mark.parametrize(
    "arguments", [pytest.param(value, id=name) for name, value in UNUSABLE_OBJECTS]
)
def test_merge_of_arguments_without_a_usable_op_is_unrecoverable(arguments: object) -> None:
    prior = parse(PRIOR).sections
    result = merge(prior, arguments, counter=words)
    assert result.sections == {s: prior[s] for s in SECTIONS}
    assert all(
        (d.requested, d.applied, d.reason) == (None, OpKind.KEEP, Reason.UNRECOVERABLE_ARGUMENTS)
        for d in result.decisions
    )
    assert all("schema_violation" in d.details for d in result.decisions)
