"""The tool schemas (Draft 2020-12) and the lenient reading of arguments (DESIGN 3.3, 3.7)."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from app.wm.ops import KEEP, OpKind, SectionOp, append, update
from app.wm.reasons import Reason
from app.wm.schema import (
    CREATE_ARGUMENTS_SCHEMA,
    CREATE_TOOL,
    UPDATE_ARGUMENTS_SCHEMA,
    UPDATE_TOOL,
    UPDATE_VALIDATOR,
    interpret,
    is_well_formed,
    locate_ops,
    resolve,
    schema_violations,
)
from app.wm.sections import SECTIONS, Section


def all_keep() -> dict[str, Any]:
    return {"sections": {section.value: {"op": "KEEP"} for section in SECTIONS}}


def test_the_schemas_are_valid_draft_2020_12() -> None:
    Draft202012Validator.check_schema(UPDATE_ARGUMENTS_SCHEMA)
    Draft202012Validator.check_schema(CREATE_ARGUMENTS_SCHEMA)
    assert UPDATE_ARGUMENTS_SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_the_tools_are_openai_function_tools() -> None:
    assert UPDATE_TOOL["type"] == "function"
    assert UPDATE_TOOL["function"]["name"] == "update_working_memory"
    assert "$schema" not in UPDATE_TOOL["function"]["parameters"]
    assert UPDATE_TOOL["function"]["parameters"]["required"] == ["sections"]
    assert CREATE_TOOL["function"]["name"] == "create_working_memory"
    assert CREATE_TOOL["function"]["parameters"]["required"] == ["markdown"]


@pytest.mark.parametrize(
    ("op", "valid"),
    [
        ({"op": "KEEP"}, True),
        ({"op": "UPDATE", "content": "x"}, True),
        ({"op": "APPEND", "items": ["a"]}, True),
        ({"op": "keep"}, False),
        ({"op": "KEEP", "note": "extra"}, False),
        ({"op": "UPDATE"}, False),
        ({"op": "UPDATE", "content": 3}, False),
        ({"op": "APPEND", "items": "a"}, False),
        ({"op": "APPEND", "items": [1]}, False),
        ({"op": "DELETE"}, False),
        ("KEEP", False),
    ],
)
def test_each_section_is_one_of_three_closed_ops(op: object, valid: bool) -> None:
    arguments = all_keep()
    arguments["sections"]["Open Issues"] = op
    assert UPDATE_VALIDATOR.is_valid(arguments) is valid


def test_all_seven_sections_are_required_and_nothing_else_is_allowed() -> None:
    arguments = all_keep()
    del arguments["sections"]["Open Issues"]
    assert not UPDATE_VALIDATOR.is_valid(arguments)
    arguments = all_keep()
    arguments["sections"]["Notes"] = {"op": "KEEP"}
    assert not UPDATE_VALIDATOR.is_valid(arguments)
    arguments = all_keep()
    arguments["reasoning"] = "because"
    assert not UPDATE_VALIDATOR.is_valid(arguments)
    assert not UPDATE_VALIDATOR.is_valid({})


def test_the_create_schema_takes_one_string() -> None:
    validator = Draft202012Validator(CREATE_ARGUMENTS_SCHEMA)
    assert validator.is_valid({"markdown": "# Working Memory"})
    assert not validator.is_valid({"markdown": 1})
    assert not validator.is_valid({"markdown": "x", "other": 1})


@pytest.mark.parametrize(
    ("raw", "op", "problem"),
    [
        ({"op": "KEEP"}, KEEP, None),
        ({"op": " keep "}, KEEP, None),
        ({"op": "Update", "content": "body"}, update("body"), None),
        ({"op": "UPDATE", "content": ""}, update(""), None),
        ({"op": "UPDATE", "content": None}, None, "UPDATE without a string content"),
        ({"op": "UPDATE"}, None, "UPDATE without a string content"),
        ({"op": "append", "items": ["a", "b"]}, append(["a", "b"]), None),
        ({"op": "APPEND", "items": "one item, not three"}, append(["one item, not three"]), None),
        ({"op": "APPEND", "items": "- a\n\n- b"}, append(["a", "b"]), None),
        ({"op": "APPEND", "items": ["x\ny", "  ", "- z"]}, append(["x", "y", "z"]), None),
        ({"op": "APPEND", "items": [1, 2.5, 1e20, -0]}, append(["1", "2.5", "1e+20", "0"]), None),
        ({"op": "APPEND", "items": [True, None, {"a": 1}, ["b"], float("nan")]}, append([]), None),
        ({"op": "APPEND", "items": ("t",)}, append(["t"]), None),
        ({"op": "APPEND"}, None, "APPEND without a list of items"),
        ({"op": "APPEND", "items": None}, None, "APPEND without a list of items"),
        ({"op": "APPEND", "items": {"a": 1}}, None, "APPEND without a list of items"),
        ({"op": "DELETE"}, None, "unknown op 'DELETE'"),
        ({"op": 3}, None, "the op has no name"),
        ({}, None, "the op has no name"),
        ("KEEP", None, "the op is not an object"),
        (["KEEP"], None, "the op is not an object"),
        ({"op": "KEEP", "content": "ignored"}, KEEP, None),
    ],
)
def test_interpret(raw: object, op: SectionOp | None, problem: str | None) -> None:
    assert interpret(raw) == (op, problem)
    assert is_well_formed(raw) is (op is not None)


def test_locate_ops_reads_wrapped_or_top_level_sections() -> None:
    wrapped = {"sections": {"Session Title": {"op": "KEEP"}}}
    top = {"session title": {"op": "KEEP"}, "Open Issues": 1, "other": 2, 3: 4}
    both = {"sections": {"Current State": "a"}, "Current State": "b", "Open Issues": "c"}
    assert locate_ops(wrapped) == {Section.SESSION_TITLE: {"op": "KEEP"}}
    assert locate_ops(top) == {Section.SESSION_TITLE: {"op": "KEEP"}, Section.OPEN_ISSUES: 1}
    assert locate_ops(both) == {Section.CURRENT_STATE: "a", Section.OPEN_ISSUES: "c"}
    assert locate_ops(["not", "a", "mapping"]) == {}
    assert locate_ops({"sections": "not a mapping", "Open Issues": 1}) == {Section.OPEN_ISSUES: 1}


def test_resolve_valid_arguments_has_no_violation() -> None:
    resolved = resolve(all_keep())
    assert all(r.op == KEEP and r.schema_violation is None for r in resolved.values())


def test_resolve_records_missing_and_invalid_ops_with_the_validator_message() -> None:
    arguments = all_keep()
    del arguments["sections"]["Open Issues"]
    arguments["sections"]["Files & Context"] = {"op": "DELETE"}
    resolved = resolve(arguments)
    assert resolved[Section.OPEN_ISSUES].op is None
    assert resolved[Section.OPEN_ISSUES].problem is Reason.MISSING_OP
    assert resolved[Section.OPEN_ISSUES].schema_violation == "'Open Issues' is a required property"
    assert resolved[Section.FILES].problem is Reason.INVALID_OP
    assert resolved[Section.FILES].detail == "unknown op 'DELETE'"
    assert "is not valid under any of the given schemas" in str(
        resolved[Section.FILES].schema_violation
    )
    assert resolved[Section.SESSION_TITLE].schema_violation is None


def test_resolve_top_level_arguments_is_lenient_but_flags_every_section() -> None:
    resolved = resolve({"Session Title": {"op": "UPDATE", "content": "T"}})
    assert resolved[Section.SESSION_TITLE].op == update("T")
    assert resolved[Section.CURRENT_STATE].problem is Reason.MISSING_OP
    assert all(r.schema_violation for r in resolved.values())


def test_an_unknown_name_under_sections_flags_every_section() -> None:
    arguments = all_keep()
    arguments["sections"]["Notes"] = {"op": "KEEP"}
    violations = schema_violations(arguments)
    assert set(violations) == set(SECTIONS)


def test_a_long_validator_message_is_cut() -> None:
    arguments = all_keep()
    arguments["sections"]["Open Issues"] = {"op": "APPEND", "items": ["x" * 1000]}
    arguments["sections"]["Open Issues"]["extra"] = 1
    message = schema_violations(arguments)[Section.OPEN_ISSUES]
    assert len(message) == 300


def test_resolve_non_mapping_arguments() -> None:
    resolved = resolve("not an object")
    assert all(r.problem is Reason.MISSING_OP for r in resolved.values())
    assert all(
        r.schema_violation == "'not an object' is not of type 'object'" for r in resolved.values()
    )


def test_op_kinds_are_the_stable_strings() -> None:
    assert [kind.value for kind in OpKind] == ["KEEP", "UPDATE", "APPEND"]
