"""Writes ``workmem_client/models.py``: the API's answers as pydantic models, generated from the
server's OpenAPI document, so the client's types are the server's (a test regenerates the file
and compares).

Run from the repository's root, with the server and ruff installed:
``python clients/python/generate_models.py``. ``render`` is pure (a document in, the module's
text out); ``formatted`` puts it in the repository's format (ruff); only ``main`` imports the
server.
"""

from __future__ import annotations

import json
import keyword
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ANSWERS = (
    "AgentSessionPage",
    "AgentSessionRead",
    "AppendResult",
    "ArchiveExpanded",
    "ArchivePage",
    "ArchiveRead",
    "BatchAppendResult",
    "CommitRead",
    "CompactRead",
    "ContextRead",
    "ContextRecordPage",
    "ContextRecordRead",
    "DecisionRead",
    "DeliveryAttemptRead",
    "DeliveryPage",
    "DeliveryRead",
    "ErasureReceipt",
    "HistoryHitRead",
    "HistorySearchRead",
    "MemoryHitRead",
    "MemoryRead",
    "MemorySearchRead",
    "MessagePage",
    "MessageRead",
    "ModelUsageReport",
    "PinList",
    "PinRead",
    "ReceiptPublicKey",
    "RedactionRead",
    "RetentionPolicyRead",
    "RetractionRead",
    "SectionHistoryPage",
    "SectionVersionRead",
    "UserMemoryPolicyRead",
    "WebhookCreated",
    "WebhookPage",
    "WebhookRead",
    "WorkingMemoryRead",
)
"""The answers the client parses; every schema they refer to is generated with them."""

HEADER = '''"""The workmem API's answers as pydantic models. GENERATED from the server's OpenAPI
document by ``clients/python/generate_models.py``: do not edit (a test regenerates this file and
compares).

Fields the server adds later are ignored, so an older client reads a newer server's answers.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, Field
'''


def _ref(schema: Mapping[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return None if ref is None else str(ref).rsplit("/", 1)[-1]


def _references(schema: object) -> Iterator[str]:
    if isinstance(schema, Mapping):
        name = _ref(schema)
        if name is not None:
            yield name
        for value in schema.values():
            yield from _references(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _references(value)


def _ordered(schemas: Mapping[str, Any], roots: tuple[str, ...]) -> list[str]:
    """Every schema the roots reach, each after the ones it refers to."""
    done: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in done or name in path:
            return
        for referred in sorted(set(_references(schemas[name]))):
            visit(referred, (*path, name))
        done.append(name)

    for root in sorted(roots):
        visit(root, ())
    return done


def _literal(values: list[Any]) -> str:
    return f"Literal[{', '.join(json.dumps(value) for value in values)}]"


def annotation(schema: Mapping[str, Any]) -> str:
    """The Python type of a JSON schema (the subset pydantic writes)."""
    name = _ref(schema)
    if name is not None:
        return name
    if "anyOf" in schema:
        options = [annotation(option) for option in schema["anyOf"]]
        return " | ".join(dict.fromkeys(options))
    if "enum" in schema:
        return _literal(list(schema["enum"]))
    kind = schema.get("type")
    if kind == "string":
        return {"uuid": "uuid.UUID", "date-time": "datetime"}.get(str(schema.get("format")), "str")
    if kind == "integer":
        return "int"
    if kind == "number":
        return "float"
    if kind == "boolean":
        return "bool"
    if kind == "null":
        return "None"
    if kind == "array":
        return f"list[{annotation(schema.get('items') or {})}]"
    if kind == "object" or kind is None:
        extra = schema.get("additionalProperties")
        value = annotation(extra) if isinstance(extra, Mapping) and extra else "Any"
        return f"dict[str, {value}]"
    raise ValueError(f"no Python type for {dict(schema)}")


def _field(name: str, schema: Mapping[str, Any], required: bool) -> str:
    kind = annotation(schema)
    default: str | None = None
    if "default" in schema:
        default = repr(schema["default"])
    elif not required:
        kind = kind if "None" in kind.split(" | ") else f"{kind} | None"
        default = "None"
    attribute = f"{name}_" if keyword.iskeyword(name) else name
    arguments = [] if default is None else [f"default={default}"]
    if "description" in schema:
        arguments.append(f"description={schema['description']!r}")
    if attribute != name:
        arguments.append(f"alias={name!r}")
    if not arguments:
        return f"    {attribute}: {kind}"
    if arguments == [f"default={default}"]:
        return f"    {attribute}: {kind} = {default}"
    return f"    {attribute}: {kind} = Field({', '.join(arguments)})"


def _docstring(text: str, indent: str) -> list[str]:
    words = " ".join(text.split()).replace('"""', "'''")
    return [f'{indent}"""{words}"""']


def _model(name: str, schema: Mapping[str, Any]) -> list[str]:
    if "enum" in schema:
        lines = [f"class {name}(StrEnum):"]
        if schema.get("description"):
            lines += [*_docstring(str(schema["description"]), "    "), ""]
        for value in schema["enum"]:
            member = "".join(c if c.isalnum() else "_" for c in str(value)).upper()
            lines.append(f"    {member} = {json.dumps(value)}")
        return lines
    lines = [f"class {name}(BaseModel):"]
    if schema.get("description"):
        lines += [*_docstring(str(schema["description"]), "    "), ""]
    required = set(schema.get("required") or ())
    properties = schema.get("properties") or {}
    lines += [_field(field, value, field in required) for field, value in properties.items()]
    if not properties:
        lines.append("    pass")
    return lines


def _aliases(document: Mapping[str, Any]) -> list[str]:
    """Named value sets of the requests the client makes."""
    search = document["paths"]["/v1/memories/search"]["get"]["parameters"]
    [category] = [p["schema"] for p in search if p["name"] == "category"]
    [categories] = [option for option in category["anyOf"] if "enum" in option]
    events = document["components"]["schemas"]["WebhookCreate"]["properties"]["events"]
    return [
        f"CategoryName: TypeAlias = {_literal(categories['enum'])}",
        f"EventType: TypeAlias = {_literal(events['items']['enum'])}",
    ]


def render(document: Mapping[str, Any]) -> str:
    """The text of ``models.py`` for an OpenAPI document."""
    schemas = document["components"]["schemas"]
    blocks = [HEADER + "\n" + "\n".join(_aliases(document))]
    blocks += ["\n".join(_model(name, schemas[name])) for name in _ordered(schemas, ANSWERS)]
    names = sorted([*_ordered(schemas, ANSWERS), "CategoryName", "EventType"])
    blocks.append("__all__ = [\n" + "".join(f'    "{name}",\n' for name in names) + "]")
    return "\n\n\n".join(blocks) + "\n"


TARGET = Path(__file__).parent / "workmem_client" / "models.py"


def formatted(text: str) -> str:
    """``text`` as ``ruff format`` (the repository's configuration) writes it."""
    return subprocess.run(  # noqa: S603 - a fixed command, the generated text on stdin
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(TARGET), "-"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def server_document() -> dict[str, Any]:
    """The OpenAPI document of the server's ``/v1`` API."""
    from app.config import Settings
    from app.main import create_app

    document: dict[str, Any] = create_app(Settings(database_url="postgresql://unused/x")).openapi()
    return document


def main() -> None:
    TARGET.write_text(formatted(render(server_document())), encoding="utf-8")


if __name__ == "__main__":
    main()
