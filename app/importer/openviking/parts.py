"""One line of an OpenViking ``messages.jsonl`` → the OpenAI-format messages it stands for.

Text parts become content; a context part becomes text with its abstract; a tool part (call and
result together) becomes an assistant ``tool_calls`` entry plus a ``tool`` message with the
output, its status and bookkeeping kept in metadata. Part order is kept: text after a tool part
starts a new message after the result. What cannot be converted is kept in metadata and
reported. Pure: the externalized tool outputs are read through a callback.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, cast

from pydantic import ValidationError

from app.importer.openviking.records import ProblemKind
from app.sessions.schemas import MessageCreate
from app.validation import find_unstorable, replace_unstorable

ROLES: Final = frozenset({"user", "assistant", "system"})
IMAGE_DETAILS: Final = frozenset({"auto", "low", "high"})

FullOutput = Callable[[Mapping[str, Any]], tuple[str | None, str]]
"""For an externalized tool part: the full output, or ``None`` and why it could not be read."""


class InvalidLine(Exception):
    """A line that is not a message at all; it is skipped and reported."""

    def __init__(self, kind: ProblemKind, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


@dataclass(slots=True)
class ToolCallIds:
    """Tool-call ids of one agent session. OpenViking's ``tool_id`` is the client's and may
    repeat; model APIs want each call id once per conversation, so a repeat gets a suffix (the
    original stays in the tool message's metadata)."""

    seen: set[str] = field(default_factory=set)

    def assign(self, tool_id: str, fallback: str) -> str:
        base = tool_id or fallback
        candidate, number = base, 2
        while candidate in self.seen:
            candidate, number = f"{base}_{number}", number + 1
        self.seen.add(candidate)
        return candidate


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


@dataclass(slots=True)
class _Builder:
    """Accumulates the messages of one line in order."""

    role: str
    base: dict[str, Any]
    content: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    out: list[dict[str, Any]] = field(default_factory=list)

    def metadata(self, role: str, **extra: Any) -> dict[str, Any]:
        own = dict(self.base)
        if role != self.role:
            own["role"] = self.role
        return {"openviking": {**own, **extra}}

    def _content(self, role: str) -> str | list[dict[str, Any]] | None:
        parts = self.content
        if role != "user":
            # Only user messages may carry images in a chat request; elsewhere the link is text.
            parts = [
                part
                if part["type"] == "text"
                else {"type": "text", "text": f"[image: {part['image_url']['url']}]"}
                for part in parts
            ]
        if not parts:
            return None
        if len(parts) == 1 and parts[0]["type"] == "text":
            text: str = parts[0]["text"]
            return text
        if role == "system":
            return "\n".join(part["text"] for part in parts)
        return parts

    def flush(self) -> None:
        if self.calls:
            self.out.append(
                {
                    "role": "assistant",
                    "content": self._content("assistant"),
                    "tool_calls": self.calls,
                    "metadata": self.metadata("assistant"),
                }
            )
            self.out.extend(self.results)
        elif self.content:
            self.out.append(
                {
                    "role": self.role,
                    "content": self._content(self.role),
                    "metadata": self.metadata(self.role),
                }
            )
        self.content, self.calls, self.results = [], [], []

    def add_content(self, part: dict[str, Any]) -> None:
        if self.calls:
            self.flush()
        self.content.append(part)

    def add_tool(self, call: dict[str, Any], result: dict[str, Any]) -> None:
        if self.role != "assistant" and self.content:
            self.flush()
        self.calls.append(call)
        self.results.append(result)


def _context_text(part: Mapping[str, Any]) -> str:
    label = " ".join(
        str(value) for value in ("context", part.get("context_type"), part.get("uri")) if value
    )
    abstract = part.get("abstract")
    return f"[{label}] {abstract}" if isinstance(abstract, str) and abstract else f"[{label}]"


def _tool(
    part: Mapping[str, Any],
    index: int,
    builder: _Builder,
    ids: ToolCallIds,
    full_output: FullOutput,
    problems: list[tuple[ProblemKind, str]],
) -> None:
    message_id = builder.base["message_id"]
    tool_id = part.get("tool_id") if isinstance(part.get("tool_id"), str) else ""
    name = part.get("tool_name")
    if not isinstance(name, str) or not name:
        problems.append((ProblemKind.INVALID_PART, f"tool part {index} has no tool_name"))
        name = "unknown_tool"
    arguments = "{}" if part.get("tool_input") is None else _json_text(part["tool_input"])
    output = "" if part.get("tool_output") is None else _json_text(part["tool_output"])
    extra: dict[str, Any] = {
        key: value
        for key, value in part.items()
        if key not in ("type", "tool_input", "tool_output")
    }
    if part.get("tool_output_ref"):
        full, why = full_output(part)
        extra["tool_output_restored"] = full is not None
        if full is None:
            problems.append((ProblemKind.TOOL_OUTPUT_MISSING, f"tool part {index}: {why}"))
        else:
            output = full
    call_id = ids.assign(str(tool_id), f"call_{message_id}_{index}")
    builder.add_tool(
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}},
        {
            "role": "tool",
            "tool_call_id": call_id,
            "content": output,
            "metadata": builder.metadata("tool", part_index=index, **extra),
        },
    )


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
    # version adds) rides along in metadata.
    base: dict[str, Any] = {"message_id": message_id}
    base.update(
        (key, value)
        for key, value in raw.items()
        if key not in ("id", "role", "parts", "created_at")
    )
    builder = _Builder(str(role), base)
    unknown: list[Any] = []
    tool_parts = 0
    for index, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            builder.add_content({"type": "text", "text": part["text"]})
        elif kind == "context":
            builder.add_content({"type": "text", "text": _context_text(part)})
        elif (
            kind == "image_url"
            and isinstance(part.get("image_url"), dict)
            and isinstance(part["image_url"].get("url"), str)
            and part["image_url"]["url"]
        ):
            image: dict[str, Any] = {"url": part["image_url"]["url"]}
            if part["image_url"].get("detail") in IMAGE_DETAILS:
                image["detail"] = part["image_url"]["detail"]
            builder.add_content({"type": "image_url", "image_url": image})
        elif kind == "tool":
            tool_parts += 1
            _tool(part, index, builder, ids, full_output, problems)
        else:
            known = kind in ("text", "image_url")
            problems.append(
                (
                    ProblemKind.INVALID_PART if known else ProblemKind.UNKNOWN_PART,
                    f"part {index} ({kind!r}) {'is malformed' if known else 'has an unknown type'}"
                    "; kept in the message's metadata",
                )
            )
            unknown.append(part)
    builder.flush()
    if not builder.out:
        builder.out.append(
            {"role": builder.role, "content": "", "metadata": builder.metadata(builder.role)}
        )
    if unknown:
        builder.out[0]["metadata"]["openviking"]["unconverted_parts"] = unknown
    messages = []
    for body in builder.out:
        try:
            message = MessageCreate.model_validate({**body, "created_at": created_at})
        except ValidationError as error:
            raise InvalidLine(
                ProblemKind.INVALID_MESSAGE, f"not a valid chat message: {error.errors()[0]['msg']}"
            ) from error
        size = len(json.dumps(message.openai_message(), ensure_ascii=False).encode())
        if size > max_message_bytes:
            problems.append(
                (
                    ProblemKind.MESSAGE_TOO_LARGE,
                    f"a {message.role} message of {size} bytes is above WORKMEM_MAX_MESSAGE_BYTES "
                    f"({max_message_bytes}); the session is not imported",
                )
            )
        messages.append(message)
    return Converted(message_id, tuple(messages), tool_parts, tuple(problems))
