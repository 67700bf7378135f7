"""Tool-result clearing: older tool results in a context replaced by a one-line placeholder.

Pure. Owns which results are cleared (all but the newest ``keep`` of the context, never those
of an excluded tool, never one shorter than its placeholder), the placeholder (which tool, how
large, and the request that reads the result in full), and what clearing saved. A cleared result
keeps its role and ``tool_call_id``, so its tool group stays valid for the chat API; the stored
message is never changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from app.context.units import Unit
from app.sessions.records import StoredMessage
from app.sessions.tool_results import call_names as tool_call_names
from app.wm.tokens import TokenCounter

MAX_EXCLUDED_TOOLS: Final = 50
READ_BACK_TOKENS: Final = 16
"""What a tool result may cost when a context reads messages back: never more than its
placeholder, so enough is always read."""


@dataclass(frozen=True, slots=True)
class Clearing:
    """``clear_tool_results=keep`` of a context request: keep the newest ``keep`` tool results
    whole, clear the older ones except those of the ``excluded`` tools. ``messages_path`` is the
    agent session's messages endpoint, named in each placeholder."""

    keep: int
    messages_path: str
    excluded: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Cleared:
    """Units with older tool results replaced, the tokens each replaced result saved by seq,
    and how many results were kept whole (so an older run can continue the count)."""

    units: list[Unit]
    saved: Mapping[int, int] = field(default_factory=dict)
    kept: int = 0


def excluded_tools(values: Sequence[str]) -> frozenset[str]:
    """Tool names given repeated or comma-separated, blanks ignored."""
    return frozenset(name.strip() for value in values for name in value.split(",") if name.strip())


def placeholder(tool: str, tokens: int, seq: int, messages_path: str) -> str:
    return (
        f"[tool result cleared: {tool} returned {tokens} tokens; read it in full with "
        f"GET {messages_path}?after_seq={seq - 1}&limit=1]"
    )


def _tool_names(unit: Unit) -> dict[str, str]:
    return call_names(unit.head.message)


def call_names(message: Mapping[str, Any]) -> dict[str, str]:
    """The tool each call of an assistant message names, by call id (``a tool`` unnamed)."""
    return tool_call_names(message.get("tool_calls"), unnamed="a tool")


def clear_units(
    units: Sequence[Unit], clearing: Clearing, counter: TokenCounter, *, kept_before: int = 0
) -> Cleared:
    """Clear the tool results of ``units`` (oldest first) but the newest ``clearing.keep``,
    counting ``kept_before`` results already kept whole by newer units of the context."""
    kept = kept_before
    saved: dict[int, int] = {}
    result: list[Unit] = list(units)
    for index in range(len(units) - 1, -1, -1):
        unit = units[index]
        if len(unit.members) == 1:
            continue
        names = _tool_names(unit)
        members: list[StoredMessage] = []
        # Newest first within a group too; the members are put back in order below.
        for member in reversed(unit.members):
            name = names.get(str(member.message.get("tool_call_id")), "a tool")
            if member.role != "tool" or name in clearing.excluded:
                members.append(member)
                continue
            if kept < clearing.keep:
                kept += 1
                members.append(member)
                continue
            text = placeholder(name, member.token_count, member.seq, clearing.messages_path)
            tokens = counter(text)
            if tokens >= member.token_count:
                members.append(member)
                continue
            sent: dict[str, Any] = {**member.message, "content": text}
            members.append(replace(member, message=sent, token_count=tokens))
            saved[member.seq] = member.token_count - tokens
        result[index] = Unit(tuple(reversed(members)))
    return Cleared(result, saved, kept - kept_before)


def read_back_cost(message: StoredMessage, clearing: Clearing | None) -> int:
    """What a message may cost in a context, at most: a tool result may be cleared."""
    if clearing is not None and message.role == "tool":
        return min(message.token_count, READ_BACK_TOKENS)
    return message.token_count
