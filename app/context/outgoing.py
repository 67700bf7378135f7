"""Messages as a chat-completions request accepts them: stored fields the API rejects removed.

Pure: one message in, the message to send and whether anything was taken out. Never drops a
message (``units`` decides what is sent) and never changes its text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

# The chat-completions request schema per role: other keys are rejected as "additional
# properties", so fields a client stored beside a message (a tool result's ``name``) stay home.
_OUTGOING_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset(
        {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"}
    ),
    "tool": frozenset({"role", "content", "tool_call_id"}),
}
_TOOL_CALL_KEYS: Final = frozenset({"id", "type", "function"})
_FUNCTION_KEYS: Final = frozenset({"name", "arguments"})
_PARTICIPANT_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def outgoing(message: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """The message as a chat-completions request accepts it, and whether anything was removed."""
    allowed = _OUTGOING_KEYS.get(str(message.get("role")))
    if allowed is None:
        return dict(message), False
    sent = {key: value for key, value in message.items() if key in allowed}
    changed = len(sent) != len(message)
    name = sent.get("name")
    if "name" in sent and not (isinstance(name, str) and _PARTICIPANT_NAME.match(name)):
        del sent["name"]
        changed = True
    calls = sent.get("tool_calls")
    if isinstance(calls, list):
        if not calls:
            del sent["tool_calls"]
            changed = True
        else:
            cleaned = [_outgoing_call(call) for call in calls]
            if cleaned != calls:
                sent["tool_calls"] = cleaned
                changed = True
    return sent, changed


def _outgoing_call(call: object) -> object:
    if not isinstance(call, Mapping):
        return call
    sent = {key: value for key, value in call.items() if key in _TOOL_CALL_KEYS}
    function = sent.get("function")
    if isinstance(function, Mapping):
        sent["function"] = {key: value for key, value in function.items() if key in _FUNCTION_KEYS}
    return sent
