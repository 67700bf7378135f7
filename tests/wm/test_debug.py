"""The JSON reports behind ``workmem wm merge`` and ``workmem wm extract``."""

from __future__ import annotations

import json

import pytest

from app.wm.debug import extract_report, merge_report
from app.wm.sections import SECTIONS
from tests.wm.helpers import words

PRIOR = """Imported preamble
# Working Memory
## Session Title
Fix the parser
## Open Issues
- Why does it fail?
## Notes
kept aside
"""
OPS = {"sections": {"Open Issues": {"op": "UPDATE", "content": "- new"}}}


def decisions(report: dict[str, object]) -> list[dict[str, object]]:
    listed = report["decisions"]
    assert isinstance(listed, list)
    return listed


def test_merge_report_with_an_ops_object() -> None:
    report = merge_report(PRIOR, json.dumps(OPS), counter=words)
    assert json.loads(json.dumps(report)) == report
    assert report["sections"]["Open Issues"] == (  # type: ignore[index]
        "- new\n- [silently dropped, restored] Why does it fail?"
    )
    assert report["preamble"] == "Imported preamble"
    assert report["extra"] == [{"heading": "Notes", "body": "kept aside"}]
    assert report["recovery"] is None
    assert [d["section"] for d in decisions(report)] == [s.value for s in SECTIONS]
    assert decisions(report)[6]["reason"] == "open_issues_restored"
    assert str(report["markdown"]).startswith(
        "# Working Memory\n\n## Session Title\nFix the parser"
    )


@pytest.mark.parametrize(
    "ops_text",
    [
        json.dumps({"arguments": json.dumps(OPS)}),
        json.dumps({"function": {"name": "update_working_memory", "arguments": json.dumps(OPS)}}),
        json.dumps({"function": {"arguments": OPS}}),
        json.dumps(json.dumps(OPS)),
        json.dumps(OPS)[:-1],
        "Here you go: " + json.dumps(OPS),
    ],
)
def test_merge_report_reads_tool_calls_and_raw_argument_strings(ops_text: str) -> None:
    report = merge_report(PRIOR, ops_text, counter=words)
    assert decisions(report)[6]["reason"] == "open_issues_restored"


def test_merge_report_says_how_arguments_were_recovered() -> None:
    report = merge_report(PRIOR, json.dumps(OPS)[:-1], counter=words)
    assert report["recovery"] == {"path": "repaired", "scanned": []}


@pytest.mark.parametrize("ops_text", ["not json at all", "[1, 2]", "", json.dumps("no ops")])
def test_unrecoverable_arguments_keep_the_prior(ops_text: str) -> None:
    report = merge_report(PRIOR, ops_text, counter=words)
    assert report["sections"]["Open Issues"] == "- Why does it fail?"  # type: ignore[index]
    assert {d["reason"] for d in decisions(report)} == {"unrecoverable_arguments"}
    assert report["recovery"] == {"path": "unrecoverable", "scanned": []}


def test_an_ops_object_without_sections_is_unrecoverable() -> None:
    report = merge_report("", "{}", counter=words)
    assert {d["reason"] for d in decisions(report)} == {"unrecoverable_arguments"}
    assert report["recovery"] == {"path": "unrecoverable", "scanned": []}


def test_an_ops_object_with_one_usable_op_is_merged_as_it_is() -> None:
    report = merge_report(PRIOR, json.dumps({"Open Issues": {"op": "KEEP"}}), counter=words)
    assert [d["reason"] for d in decisions(report)] == ["missing_op"] * 6 + ["accepted"]
    assert report["recovery"] is None


def test_an_empty_prior_is_an_empty_working_memory() -> None:
    report = merge_report("", json.dumps(OPS), counter=words)
    assert report["sections"]["Open Issues"] == "- new"  # type: ignore[index]
    assert report["preamble"] == ""
    assert report["extra"] == []


def test_extract_report_gives_the_ops_and_their_merge() -> None:
    messages: list[dict[str, object]] = [
        {"role": "user", "content": "Please fix app/parser.py. Never change the public API."}
    ]
    report = extract_report(messages, PRIOR, counter=words)
    assert json.loads(json.dumps(report)) == report
    sections = report["ops"]["sections"]  # type: ignore[index]
    assert sections["Files & Context"] == {
        "op": "APPEND",
        "items": ["app/parser.py (mentioned by User)"],
    }
    assert "app/parser.py" in str(report["markdown"])
    assert report["sections"]["Session Title"] == "Fix the parser"  # type: ignore[index]
    assert extract_report(messages)["preamble"] == ""
