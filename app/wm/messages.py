"""A typed, read-only view of OpenAI-format chat messages for prompts and the offline extractor.

Owns how a message's text, tool calls and tool results are read (content parts, arguments given
as strings or objects, result names resolved through ``tool_call_id``). Never counts tokens and
never validates messages for storage; anything malformed is read as empty, never raised.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

KNOWN_ROLES: Final = frozenset({"system", "user", "assistant", "tool"})

EQUIVALENT_ROLES: Final = {"developer": "system"}
"""Roles read as another: OpenAI's ``developer`` messages are the system role's successor."""


@dataclass(frozen=True, slots=True)
class ToolCallView:
    """One tool call of an assistant message, arguments always as a string."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class MessageView:
    """One message: ``role`` is one of system, user, assistant, tool (anything else reads as user).

    ``tool_name`` is the name of the tool a ``tool`` message answers; ``speaker`` is the message's
    ``name`` when it has one, else its role.
    """

    position: int
    role: str
    text: str
    speaker: str
    tool_calls: tuple[ToolCallView, ...] = ()
    tool_name: str = ""
    tool_call_id: str = ""


def content_text(content: object) -> str:
    """The text of a ``content`` field: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = [
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        ]
        return "\n".join(pieces)
    return ""


def _tool_calls(raw: object) -> tuple[ToolCallView, ...]:
    if not isinstance(raw, list):
        return ()
    calls: list[ToolCallView] = []
    for entry in raw:
        if not isinstance(entry, Mapping):
            continue
        function = entry.get("function")
        if not isinstance(function, Mapping):
            continue
        name = function.get("name")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = "" if arguments is None else json.dumps(arguments, ensure_ascii=False)
        call_id = entry.get("id")
        calls.append(
            ToolCallView(
                call_id=call_id if isinstance(call_id, str) else "",
                name=name if isinstance(name, str) else "",
                arguments=arguments,
            )
        )
    return tuple(calls)


def read_messages(messages: Iterable[object]) -> list[MessageView]:
    """Typed views of the messages, in order; entries that are not objects are skipped."""
    names_by_call: dict[str, str] = {}
    read: list[MessageView] = []
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        role = EQUIVALENT_ROLES.get(role, role) if isinstance(role, str) else role
        role = role if isinstance(role, str) and role in KNOWN_ROLES else "user"
        calls = _tool_calls(message.get("tool_calls"))
        for call in calls:
            if call.call_id:
                names_by_call[call.call_id] = call.name
        name = message.get("name")
        name = name.strip() if isinstance(name, str) else ""
        tool_name = ""
        answered = message.get("tool_call_id")
        answered = answered if isinstance(answered, str) else ""
        if role == "tool":
            tool_name = name or names_by_call.get(answered, "") or "tool"
        read.append(
            MessageView(
                position=position,
                role=role,
                text=content_text(message.get("content")),
                speaker=name if name and role in ("user", "assistant") else role,
                tool_calls=calls,
                tool_name=tool_name,
                tool_call_id=answered,
            )
        )
    return read


def arguments_summary(arguments: str, limit: int = 300) -> str:
    """Tool-call arguments as ``key=value`` pairs when they are a JSON object, else the raw text."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict):
        pairs = []
        for key, value in parsed.items():
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            pairs.append(f"{key}={shown}")
        text = ", ".join(pairs)
    else:
        text = arguments.strip()
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
