"""Units of raw messages for a context: tool groups kept whole, and newest-first fitting.

Pure: decides which stored messages can be sent together (a call with all its results, never
one without the other) and which of them fit a budget. Never changes a message (``outgoing``)
and never reads the working memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.sessions.records import StoredMessage


@dataclass(frozen=True, slots=True)
class Unit:
    """Kept or left out as a whole: one message, or a tool group (a call and its results)."""

    members: tuple[StoredMessage, ...]

    @property
    def tokens(self) -> int:
        return sum(member.token_count for member in self.members)

    @property
    def head(self) -> StoredMessage:
        return self.members[0]

    @property
    def is_user(self) -> bool:
        return self.head.role == "user"


class DropReason(StrEnum):
    ORPHAN_TOOL_RESULT = "orphan_tool_result"
    """A tool message that answers no call directly before it."""
    UNANSWERED_TOOL_CALLS = "unanswered_tool_calls"
    """A tool call whose results are missing, followed by other messages."""
    AWAITING_TOOL_RESULTS = "awaiting_tool_results"
    """The newest message is a tool call whose results have not been appended yet."""
    INVALID_TOOL_CALLS = "invalid_tool_calls"
    """A tool-call list a chat server rejects (an id missing or used twice)."""


@dataclass(frozen=True, slots=True)
class Dropped:
    seq: int
    reason: DropReason


def _tool_call_ids(message: Mapping[str, Any]) -> list[str | None]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return []
    return [
        call.get("id") if isinstance(call, Mapping) and isinstance(call.get("id"), str) else None
        for call in calls
    ]


def group_units(
    candidates: Sequence[StoredMessage], *, complete: bool
) -> tuple[list[Unit], list[Dropped]]:
    """Units of a run of consecutive messages, oldest first, and the messages that can never be
    sent as they are (a strict server would reject them), with why.

    ``complete`` says the run starts at the summary's boundary. When it does not, leading tool
    messages belong to a group whose call is older than the run: they are outside, not malformed.
    """
    units: list[Unit] = []
    dropped: list[Dropped] = []
    index = 0
    if not complete:
        while index < len(candidates) and candidates[index].role == "tool":
            index += 1
    while index < len(candidates):
        head = candidates[index]
        if head.role == "tool":
            dropped.append(Dropped(head.seq, DropReason.ORPHAN_TOOL_RESULT))
            index += 1
            continue
        ids = _tool_call_ids(head.message) if head.role == "assistant" else []
        if not ids:
            units.append(Unit((head,)))
            index += 1
            continue
        owed = [call_id for call_id in ids if call_id is not None]
        valid = len(owed) == len(ids) and len(set(owed)) == len(owed)
        end = index + 1
        while (
            valid
            and owed
            and end < len(candidates)
            and candidates[end].role == "tool"
            and candidates[end].message.get("tool_call_id") in owed
        ):
            owed.remove(str(candidates[end].message.get("tool_call_id")))
            end += 1
        if valid and not owed:
            units.append(Unit(tuple(candidates[index:end])))
        else:
            if not valid:
                reason = DropReason.INVALID_TOOL_CALLS
            elif end == len(candidates):
                reason = DropReason.AWAITING_TOOL_RESULTS
            else:
                reason = DropReason.UNANSWERED_TOOL_CALLS
            dropped.extend(Dropped(member.seq, reason) for member in candidates[index:end])
        index = end
    return units, dropped


def newest_user_index(units: Sequence[Unit]) -> int | None:
    for index in range(len(units) - 1, -1, -1):
        if units[index].is_user:
            return index
    return None


@dataclass(frozen=True, slots=True)
class Fit:
    included: tuple[Unit, ...]
    """Oldest first."""
    tokens: int
    over_budget: bool


def fit_units(units: Sequence[Unit], budget: int) -> Fit:
    """Units that fit ``budget``, fitted newest first; the newest user message always goes in.

    What is kept is a contiguous run ending at the newest unit, except when the units after the
    newest user message do not all fit: then that message and the newest units that fit go in,
    and the older units between them are left out. A unit that does not fit stops the walk, so no
    older message ever appears without the newer ones around it. Only the newest user message on
    its own can exceed the budget; ``over_budget`` says so.
    """
    forced = newest_user_index(units)
    remaining = budget
    if forced is not None:
        remaining -= units[forced].tokens
    kept: list[int] = []
    index = len(units) - 1
    while index >= 0:
        if index == forced:
            kept.append(index)
        elif units[index].tokens <= remaining:
            kept.append(index)
            remaining -= units[index].tokens
        else:
            break
        index -= 1
    if forced is not None and forced not in kept:
        kept.append(forced)
    included = tuple(units[i] for i in sorted(kept))
    tokens = sum(unit.tokens for unit in included)
    return Fit(included, tokens, tokens > budget)
