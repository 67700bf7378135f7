"""How the audit pages name things: a tone and a phrase for each decision, a stored message as
lines to show. Pure: strings in, strings out; never reads or renders anything itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from app.wm.reasons import Reason

_NEUTRAL_REASONS = frozenset({Reason.ACCEPTED, Reason.NOTHING_NEW})
"""Reasons that mean nothing was overruled: shown plain, not as an intervention."""

Tone = Literal["neutral", "restored", "rejected", "demoted", "alert", "invalid", "other"]

_TONES: Mapping[Reason, Tone] = {
    Reason.ACCEPTED: "neutral",
    Reason.NOTHING_NEW: "neutral",
    Reason.CONSTRAINT_RESTORED: "restored",
    Reason.OPEN_ISSUES_RESTORED: "restored",
    Reason.SOURCE_RESTORED: "restored",
    Reason.FILES_PATH_REGRESSION: "rejected",
    Reason.KEY_FACTS_RATIO: "rejected",
    Reason.KEY_FACTS_ANCHOR_COVERAGE: "rejected",
    Reason.TITLE_NO_OVERLAP: "rejected",
    Reason.TITLE_EMPTY: "rejected",
    Reason.TITLE_SINGLE_LINE: "rejected",
    Reason.ERRORS_APPEND_ONLY: "demoted",
    Reason.OVERSIZED_THROTTLED: "demoted",
    Reason.EMERGENCY_SENTINEL: "alert",
    Reason.EMERGENCY_HARD_STOP: "alert",
    Reason.MISSING_OP: "invalid",
    Reason.INVALID_OP: "invalid",
    Reason.UNRECOVERABLE_ARGUMENTS: "invalid",
    Reason.UNSOURCED_CONSTRAINT: "alert",
    Reason.SOURCE_RESTORED: "restored",
    Reason.CONTRADICTS_SOURCE: "alert",
    Reason.CONFLICTING_CONSTRAINT: "alert",
    Reason.TOOL_SOURCED_INSTRUCTION: "alert",
}

_PHRASES: Mapping[Reason, str] = {
    Reason.ACCEPTED: "accepted",
    Reason.NOTHING_NEW: "nothing new",
    Reason.CONSTRAINT_RESTORED: "dropped constraints restored",
    Reason.OPEN_ISSUES_RESTORED: "dropped open issues restored",
    Reason.SOURCE_RESTORED: "items the messages state restored",
    Reason.FILES_PATH_REGRESSION: "update rejected: it lost file paths",
    Reason.KEY_FACTS_RATIO: "consolidation rejected: too few items left",
    Reason.KEY_FACTS_ANCHOR_COVERAGE: "consolidation rejected: names, dates or numbers lost",
    Reason.TITLE_NO_OVERLAP: "title change rejected: no word in common",
    Reason.TITLE_EMPTY: "empty title refused",
    Reason.TITLE_SINGLE_LINE: "title is one line: append refused",
    Reason.ERRORS_APPEND_ONLY: "rewrite turned into an append",
    Reason.OVERSIZED_THROTTLED: "section oversized: append capped",
    Reason.EMERGENCY_SENTINEL: "section far over its limit: consolidation demanded",
    Reason.EMERGENCY_HARD_STOP: "section far over its limit: nothing added",
    Reason.MISSING_OP: "the model gave no op: kept",
    Reason.INVALID_OP: "the op was unusable: kept",
    Reason.UNRECOVERABLE_ARGUMENTS: "the model's arguments were unreadable: kept",
    Reason.UNSOURCED_CONSTRAINT: "a constraint no user message gave: marked unsourced",
    Reason.SOURCE_RESTORED: "left out what the messages said: restored from the source",
    Reason.CONTRADICTS_SOURCE: "a constraint that inverts its own source: marked",
    Reason.CONFLICTING_CONSTRAINT: "a constraint that inverts a kept one: marked",
    Reason.TOOL_SOURCED_INSTRUCTION: "an instruction from a tool result or the assistant: marked",
}


def _reason(code: str) -> Reason | None:
    try:
        return Reason(code)
    except ValueError:
        return None


def tone(reason: str) -> Tone:
    """The badge colour family of a stored reason code (codes added later read as ``other``)."""
    known = _reason(reason)
    return "other" if known is None else _TONES[known]


def phrase(reason: str) -> str:
    """What a reason means, in words, beside its stable code."""
    known = _reason(reason)
    return reason.replace("_", " ") if known is None else _PHRASES[known]


def is_intervention(reason: str) -> bool:
    """Whether a guard overruled or changed what the model asked for."""
    known = _reason(reason)
    return known is None or known not in _NEUTRAL_REASONS


def detail_text(value: object) -> str:
    """A decision detail as one readable string: strings as they are, the rest as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True, slots=True)
class ToolCallLine:
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class MessageLines:
    """A stored OpenAI-format message as the raw-messages page shows it."""

    text: str
    tool_calls: tuple[ToolCallLine, ...]
    tool_call_id: str | None


def message_lines(message: Mapping[str, object]) -> MessageLines:
    content = message.get("content")
    pieces: list[str] = []
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping):
                text = part.get("text", part.get("refusal"))
                pieces.append(text if isinstance(text, str) else f"[{part.get('type')} part]")
    calls: list[ToolCallLine] = []
    raw_calls = message.get("tool_calls")
    for call in raw_calls if isinstance(raw_calls, list) else []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            arguments = function.get("arguments")
            calls.append(
                ToolCallLine(
                    name=str(function.get("name")),
                    arguments=arguments if isinstance(arguments, str) else detail_text(arguments),
                )
            )
    tool_call_id = message.get("tool_call_id")
    return MessageLines(
        text="\n".join(pieces),
        tool_calls=tuple(calls),
        tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
    )
