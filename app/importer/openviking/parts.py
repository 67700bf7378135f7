"""One line of an OpenViking ``messages.jsonl`` → the OpenAI-format messages it stands for.

The mapping itself is OpenViking's format module (``app.compat.openviking.parts``), the one the
compatible API stores through, so an imported line is stored as the same message sent through
``/api/v1`` would be. What is the importer's own: reading a line as written on disk (times,
lone surrogates, parts that do not parse, an externalized tool output restored from its file)
and reporting what it changed or could not convert, kept in the message's metadata too. Pure:
the externalized tool outputs are read through a callback.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, cast

from pydantic import TypeAdapter, ValidationError

from app.compat.openviking.parts import MESSAGE_ID, MessageIn, Part, ToolCallIds, to_openai
from app.importer.openviking.records import ProblemKind
from app.sessions.schemas import MessageCreate
from app.validation import find_unstorable, replace_unstorable

__all__ = ["Converted", "FullOutput", "InvalidLine", "ToolCallIds", "convert_line", "parse_time"]

ROLES: Final = frozenset({"user", "assistant", "system"})
IMAGE_DETAILS: Final = frozenset({"auto", "low", "high"})
_PART: Final = TypeAdapter(Part)

FullOutput = Callable[[Mapping[str, Any]], tuple[str | None, str]]
"""For an externalized tool part: the full output, or ``None`` and why it could not be read."""


class InvalidLine(Exception):
    """A line that is not a message at all; it is skipped and reported."""

    def __init__(self, kind: ProblemKind, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Converted:
    message_id: str
    messages: tuple[MessageCreate, ...]
    tool_parts: int
    problems: tuple[tuple[ProblemKind, str], ...]


def parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _json_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _image_part(part: dict[str, Any]) -> dict[str, Any]:
    """An image part with a detail chat APIs do not know loses the detail, not the image."""
    image = part.get("image_url")
    if isinstance(image, dict) and image.get("detail") not in IMAGE_DETAILS:
        return {**part, "image_url": {k: v for k, v in image.items() if k != "detail"}}
    return part


def _tool_part(
    part: dict[str, Any],
    index: int,
    full_output: FullOutput,
    problems: list[tuple[ProblemKind, str]],
) -> dict[str, Any]:
    """A tool part as the format reads it: its output text (restored from its file when it was
    externalized), its input an object, its name present."""
    part = dict(part)
    if not isinstance(part.get("tool_name"), str) or not part["tool_name"]:
        problems.append((ProblemKind.INVALID_PART, f"tool part {index} has no tool_name"))
        part["tool_name"] = ""
    if not isinstance(part.get("tool_id"), str):
        part["tool_id"] = ""
    tool_input = part.get("tool_input")
    if tool_input is not None and not isinstance(tool_input, dict):
        problems.append(
            (ProblemKind.INVALID_PART, f"tool part {index}: tool_input is not an object")
        )
        part["tool_input"] = {"arguments": tool_input}
    output = part.get("tool_output")
    part["tool_output"] = "" if output is None else _json_text(output)
    if part.get("tool_output_ref"):
        full, why = full_output(part)
        part["tool_output_restored"] = full is not None
        if full is None:
            problems.append((ProblemKind.TOOL_OUTPUT_MISSING, f"tool part {index}: {why}"))
        else:
            part["tool_output"] = full
    if not isinstance(part.get("tool_status"), str):
        part.pop("tool_status", None)
    return part


def convert_line(
    raw: object,
    *,
    ids: ToolCallIds,
    full_output: FullOutput,
    fallback_time: datetime | None,
    max_message_bytes: int,
) -> Converted:
    """The messages of one parsed JSONL line; raises ``InvalidLine`` for a line that is not a
    message (no id, no known role, no parts list)."""
    if not isinstance(raw, dict):
        raise InvalidLine(ProblemKind.INVALID_MESSAGE, "the line is not a JSON object")
    problems: list[tuple[ProblemKind, str]] = []
    if find_unstorable(raw) is not None:
        problems.append(
            (ProblemKind.UNSTORABLE_TEXT, "NUL characters or lone surrogates replaced by U+FFFD")
        )
        raw = cast(dict[str, Any], replace_unstorable(raw))
    message_id, role, parts = raw.get("id"), raw.get("role"), raw.get("parts")
    if not isinstance(message_id, str) or not message_id:
        raise InvalidLine(ProblemKind.INVALID_MESSAGE, "the message has no 'id'")
    if role not in ROLES:
        raise InvalidLine(ProblemKind.INVALID_MESSAGE, f"unknown role {role!r}")
    if not isinstance(parts, list):
        raise InvalidLine(ProblemKind.INVALID_MESSAGE, "'parts' is not a list")
    created_at = parse_time(raw.get("created_at"))
    if created_at is None:
        problems.append(
            (ProblemKind.INVALID_TIME, "no readable created_at; the previous message's is used")
        )
        created_at = fallback_time
    # Every other key (peer_id, turn_id, message_kind, source_message_ids, and any a later
    # version adds) is kept as the message's labels, as the API keeps the fields it knows.
    labels: dict[str, Any] = {MESSAGE_ID: message_id}
    labels.update(
        (key, value)
        for key, value in raw.items()
        if key not in ("id", "role", "parts", "created_at")
    )
    read: list[Any] = []
    unknown: list[Any] = []
    tool_parts = 0
    for index, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "tool" and isinstance(part, dict):
            tool_parts += 1
            part = _tool_part(part, index, full_output, problems)
        elif kind == "image_url" and isinstance(part, dict):
            part = _image_part(part)
        try:
            read.append(_PART.validate_python(part))
        except ValidationError:
            known = kind in ("text", "image_url", "context", "tool")
            problems.append(
                (
                    ProblemKind.INVALID_PART if known else ProblemKind.UNKNOWN_PART,
                    f"part {index} ({kind!r}) {'is malformed' if known else 'has an unknown type'}"
                    "; kept in the message's metadata",
                )
            )
            unknown.append(part)
    if unknown:
        labels["unconverted_parts"] = unknown
    # Built without validation: a line's role may be one the API does not take (system), and
    # its labels were kept as read.
    message = MessageIn.model_construct(
        role="assistant" if role == "assistant" else "user",
        content=None if read else "",
        parts=read or None,
        created_at=created_at,
    )
    messages = []
    for body in to_openai(message, ids, role=str(role), labels=labels):
        try:
            created = MessageCreate.model_validate(body)
        except ValidationError as error:
            raise InvalidLine(
                ProblemKind.INVALID_MESSAGE, f"not a valid chat message: {error.errors()[0]['msg']}"
            ) from error
        size = len(json.dumps(created.openai_message(), ensure_ascii=False).encode())
        if size > max_message_bytes:
            problems.append(
                (
                    ProblemKind.MESSAGE_TOO_LARGE,
                    f"a {created.role} message of {size} bytes is above WORKMEM_MAX_MESSAGE_BYTES "
                    f"({max_message_bytes}); the session is not imported",
                )
            )
        messages.append(created)
    return Converted(message_id, tuple(messages), tool_parts, tuple(problems))
