"""Turn-aware retention: where the tail a commit keeps raw starts. Pure.

Live messages are read as logical user turns (a user message and everything after it until the
next user message; what precedes the first user message is a turn of its own) made of atomic
steps (an assistant message with the tool results that follow it, or any other single message).
The tail starts only at a step boundary, so it never starts inside a tool group; and an assistant
message whose tool calls have no result yet is never the last message archived, so a call still
open stays with what follows it (as ``service.is_valid_split`` has it for ``keep_recent_count``).

The rule: keep the newest ``turns`` turns; while more than one is kept and they hold more tokens
than the budget, drop the oldest whole turn; when the one turn left alone exceeds the budget,
keep its newest steps, at least ``min_steps`` (and at least one) of them whatever the budget and
then as many more as fit, and archive its user message with the steps before them. When every
step of that turn stays, its user message stays too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class RetentionRow(Protocol):
    @property
    def role(self) -> str: ...

    @property
    def has_tool_calls(self) -> bool: ...

    @property
    def token_count(self) -> int: ...


@dataclass(frozen=True, slots=True)
class TurnRetention:
    """``turns``: newest turns kept at most; ``token_budget``: tokens the kept tail may hold;
    ``min_steps``: newest steps of a turn over the budget kept whatever the budget;
    ``remember_keep``: a ``keep_recent_count`` sent with it, remembered by the session for its
    pending counter (the split ignores it)."""

    turns: int
    token_budget: int
    min_steps: int
    remember_keep: int | None = None


def _calls(row: RetentionRow) -> bool:
    return row.role == "assistant" and row.has_tool_calls


def boundaries(rows: Sequence[RetentionRow]) -> list[int]:
    """Where a kept tail may start, ascending, ``len(rows)`` (nothing kept) included when valid:
    never at a tool result, never right after an assistant message that calls tools."""
    return [
        index
        for index in range(len(rows) + 1)
        if index == 0
        or ((index == len(rows) or rows[index].role != "tool") and not _calls(rows[index - 1]))
    ]


def turn_starts(rows: Sequence[RetentionRow]) -> list[int]:
    """Indexes where a turn starts: the first message and every user message."""
    return [index for index, row in enumerate(rows) if index == 0 or row.role == "user"]


def kept_tail_start(rows: Sequence[RetentionRow], rule: TurnRetention) -> int:
    """The index of the first message kept raw (``len(rows)``: none is kept)."""
    valid = boundaries(rows)
    forced = valid[-1]  # a call still open at the end is kept in any case

    def tokens(start: int) -> int:
        return sum(row.token_count for row in rows[start:])

    if rule.turns == 0 or not rows:
        return forced
    kept = turn_starts(rows)[-rule.turns :]
    while len(kept) > 1 and tokens(kept[0]) > rule.token_budget:
        kept = kept[1:]
    start = max(boundary for boundary in valid if boundary <= kept[0])
    if len(kept) > 1 or tokens(start) <= rule.token_budget:
        return start
    steps = [boundary for boundary in valid if start < boundary < forced]
    floor = max(1, rule.min_steps)
    tail = forced
    for step in reversed(steps):
        taken = sum(1 for boundary in valid if tail <= boundary < len(rows))
        if taken >= floor and tokens(step) > rule.token_budget:
            return tail
        tail = step
    return start
