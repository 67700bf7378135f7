"""Tool results as the API lists them, and the names of the calls they answer. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from app.sessions.records import StoredMessage, ToolResult
from app.wm.messages import content_text


def call_names(tool_calls: Any, *, unnamed: str = "") -> dict[str, str]:
    """The tool each call of one assistant message's ``tool_calls`` names, by call id."""
    names: dict[str, str] = {}
    for call in tool_calls if isinstance(tool_calls, list) else ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping) and isinstance(call.get("id"), str):
            names[call["id"]] = str(function.get("name") or unnamed)
    return names


def names_of_calls(tool_call_lists: Iterable[Any]) -> dict[str, str]:
    """Call id to tool name over many assistant messages' ``tool_calls``."""
    names: dict[str, str] = {}
    for calls in tool_call_lists:
        names.update(call_names(calls))
    return names


def tool_result_of(row: StoredMessage, names: Mapping[str, str]) -> ToolResult:
    call_id = str(row.message.get("tool_call_id") or "")
    return ToolResult(
        tool_call_id=call_id,
        tool_name=names.get(call_id, ""),
        seq=row.seq,
        text=content_text(row.message.get("content")),
        created_at=row.created_at,
        redacted=row.redacted_at is not None,
        retracted=row.retracted_at is not None,
    )
