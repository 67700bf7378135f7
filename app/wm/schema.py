"""The tools the model is called with, their JSON Schemas, and the lenient reading of arguments.

Owns ``update_working_memory`` and ``create_working_memory`` (DESIGN 3.3) and the tolerance rules
of 3.3 and 3.7: strict schema for the model, lenient interpretation for the merge. Never applies
an op and never parses raw argument strings (that is ``recovery``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from jsonschema import Draft202012Validator

from app.wm.items import item_lines
from app.wm.ops import KEEP, OpKind, SectionOp, append, update
from app.wm.reasons import Reason
from app.wm.sections import SECTIONS, Section, section_for

UPDATE_TOOL_NAME: Final = "update_working_memory"
CREATE_TOOL_NAME: Final = "create_working_memory"
CREATE_FIELD: Final = "markdown"
SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"


def _op_schema(op: OpKind, description: str, **fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "properties": {"op": {"type": "string", "enum": [op.value]}, **fields},
        "required": ["op", *fields],
        "additionalProperties": False,
    }


_SECTION_OP_SCHEMA: Final[dict[str, Any]] = {
    "oneOf": [
        _op_schema(OpKind.KEEP, "Nothing in this section changed."),
        _op_schema(
            OpKind.UPDATE,
            "Replace the section with a new full body.",
            content={
                "type": "string",
                "description": "The complete new body in Markdown, without the header line; "
                "each item ends with its message references, as (#12, #15).",
            },
        ),
        _op_schema(
            OpKind.APPEND,
            "Add new items at the end of the section.",
            items={
                "type": "array",
                "items": {"type": "string"},
                "description": "Bare item texts, one fact per item, without bullet markers, "
                "each ending with its message references, as (#12, #15).",
            },
        ),
    ]
}

UPDATE_ARGUMENTS_SCHEMA: Final[dict[str, Any]] = {
    "$schema": SCHEMA_DIALECT,
    "type": "object",
    "properties": {
        "sections": {
            "type": "object",
            "description": "One op for every one of the seven sections.",
            "properties": {section.value: _SECTION_OP_SCHEMA for section in SECTIONS},
            "required": [section.value for section in SECTIONS],
            "additionalProperties": False,
        }
    },
    "required": ["sections"],
    "additionalProperties": False,
}

CREATE_ARGUMENTS_SCHEMA: Final[dict[str, Any]] = {
    "$schema": SCHEMA_DIALECT,
    "type": "object",
    "properties": {
        CREATE_FIELD: {
            "type": "string",
            "description": "The whole working memory: '# Working Memory' and the seven sections.",
        }
    },
    "required": [CREATE_FIELD],
    "additionalProperties": False,
}


def _tool(name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    # Some OpenAI-compatible servers reject unknown top-level keywords in tool parameters, so the
    # dialect marker stays on the validation schema only.
    parameters = {key: value for key, value in schema.items() if key != "$schema"}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


UPDATE_TOOL: Final = _tool(
    UPDATE_TOOL_NAME,
    "Record the next version of the working memory as one op per section.",
    UPDATE_ARGUMENTS_SCHEMA,
)
CREATE_TOOL: Final = _tool(
    CREATE_TOOL_NAME,
    "Write the first working memory of this session as one Markdown document.",
    CREATE_ARGUMENTS_SCHEMA,
)

UPDATE_VALIDATOR: Final = Draft202012Validator(UPDATE_ARGUMENTS_SCHEMA)

_MESSAGE_LIMIT: Final = 300


@dataclass(frozen=True, slots=True)
class ResolvedOp:
    """The op a section asked for, after the tolerance rules; ``op`` is None when unusable."""

    op: SectionOp | None
    problem: Reason | None = None
    detail: str | None = None
    schema_violation: str | None = None


def schema_violations(arguments: object) -> dict[Section, str]:
    """For each section touched by a schema error, the validator's first message about it."""
    found: dict[Section, str] = {}
    for error in UPDATE_VALIDATOR.iter_errors(arguments):
        path = list(error.absolute_path)
        affected: Sequence[Section]
        if len(path) >= 2 and path[0] == "sections" and isinstance(path[1], str):
            named = section_for(path[1])
            affected = (named,) if named is not None else SECTIONS
        elif path == ["sections"] and error.validator == "required":
            # One error per missing property; its message starts with the property's repr.
            affected = tuple(s for s in SECTIONS if error.message.startswith(repr(s.value)))
        else:
            affected = SECTIONS
        message = error.message[:_MESSAGE_LIMIT]
        for section in affected:
            found.setdefault(section, message)
    return found


def locate_ops(arguments: object) -> dict[Section, object]:
    """The raw op of each section that appears, under ``sections`` or at the top level."""
    if not isinstance(arguments, Mapping):
        return {}
    found: dict[Section, object] = {}
    inner = arguments.get("sections")
    sources = [inner, arguments] if isinstance(inner, Mapping) else [arguments]
    for source in sources:
        for key, value in source.items():
            section = section_for(key) if isinstance(key, str) else None
            if section is not None and section not in found:
                found[section] = value
    return found


def interpret(raw: object) -> tuple[SectionOp | None, str | None]:
    """One section's raw op read leniently: the op, or None and why it is unusable."""
    if not isinstance(raw, Mapping):
        return None, "the op is not an object"
    name = raw.get("op")
    if not isinstance(name, str):
        return None, "the op has no name"
    kind = name.strip().upper()
    if kind == OpKind.KEEP:
        return KEEP, None
    if kind == OpKind.UPDATE:
        content = raw.get("content")
        if not isinstance(content, str):
            return None, "UPDATE without a string content"
        return update(content), None
    if kind == OpKind.APPEND:
        values = raw.get("items")
        if isinstance(values, str):
            return append(item_lines(values)), None
        if not isinstance(values, list | tuple):
            return None, "APPEND without a list of items"
        items: list[str] = []
        for value in values:
            text = _item_text(value)
            if text is not None:
                items.extend(item_lines(text))
        return append(items), None
    return None, f"unknown op {name[:40]!r}"


def _item_text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return json.dumps(value)
    if isinstance(value, float):
        # json.dumps renders non-finite floats as NaN/Infinity, which are not facts.
        return json.dumps(value) if math.isfinite(value) else None
    return None


def is_well_formed(raw: object) -> bool:
    op, _ = interpret(raw)
    return op is not None


def has_well_formed_op(arguments: object) -> bool:
    """Whether one of the seven names maps to a well-formed op: arguments worth merging at all.

    DESIGN 3.7: anything less (``sections`` not an object, empty, or only unusable ops) is not a
    proposal, so nothing was recovered; it is never read as seven missing ops.
    """
    return any(is_well_formed(op) for op in locate_ops(arguments).values())


def resolve(arguments: object) -> dict[Section, ResolvedOp]:
    """Every section's requested op under DESIGN 3.3/3.7: schema first, then leniency."""
    violations = schema_violations(arguments)
    located = locate_ops(arguments)
    resolved: dict[Section, ResolvedOp] = {}
    for section in SECTIONS:
        violation = violations.get(section)
        if section not in located:
            resolved[section] = ResolvedOp(None, Reason.MISSING_OP, None, violation)
            continue
        op, detail = interpret(located[section])
        problem = Reason.INVALID_OP if op is None else None
        resolved[section] = ResolvedOp(op, problem, detail, violation)
    return resolved
