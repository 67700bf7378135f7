"""The pure rule of turn-aware retention: where the kept tail starts."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from app.archives.retention import TurnRetention, boundaries, kept_tail_start, turn_starts


@dataclass(frozen=True)
class Row:
    role: str
    has_tool_calls: bool
    token_count: int


def rows(spec: str) -> list[Row]:
    """``"u10 c5 t7"``: kind and tokens per message (c: an assistant message calling tools, t: a
    tool result, s: system)."""
    roles = {"u": "user", "a": "assistant", "c": "assistant", "t": "tool", "s": "system"}
    return [Row(roles[item[0]], item[0] == "c", int(item[1:])) for item in spec.split()]


# Three turns: [u10 a5] 15 tokens, [u10 c5 t20 t20 a5] 60, [u10 a5] 15; steps of the second:
# c5 t20 t20 | a5. Boundaries: 0 1 2 3 6 7 8 9.
THREE = "u10 a5 u10 c5 t20 t20 a5 u10 a5"
# The second turn as the newest: 60 tokens, the tool step from index 3 (45) and a5 at 6.
TWO = "u10 a5 u10 c5 t20 t20 a5"
BIG = 1_000


@pytest.mark.parametrize(
    ("spec", "turns", "budget", "min_steps", "start"),
    [
        # turn counts: none, below, at and above the number of turns
        (THREE, 0, BIG, 1, 9),
        (THREE, 1, BIG, 1, 7),
        (THREE, 2, BIG, 1, 2),
        (THREE, 3, BIG, 1, 0),
        (THREE, 4, BIG, 1, 0),
        # the budget drops whole oldest turns: at, below and above 90, then 75
        (THREE, 3, 91, 1, 0),
        (THREE, 3, 90, 1, 0),
        (THREE, 3, 89, 1, 2),
        (THREE, 3, 75, 1, 2),
        (THREE, 3, 74, 1, 7),
        # ... but never the newest turn, whose one step is all it has: it stays whole
        (THREE, 2, 1, 1, 7),
        (THREE, 1, 15, 1, 7),
        (THREE, 1, 14, 1, 7),
        # the newest turn over the budget: the budget cuts inside it, at step boundaries
        (TWO, 1, 61, 1, 2),
        (TWO, 1, 60, 1, 2),
        (TWO, 1, 59, 1, 2),
        (TWO, 1, 50, 1, 2),
        (TWO, 1, 49, 1, 6),
        # a tool group is never split: a budget between its parts keeps none of it
        (TWO, 1, 45, 1, 6),
        (TWO, 1, 20, 1, 6),
        # min_raw_tail_steps overrides the budget, at, below and above the steps it needs
        (TWO, 1, 5, 1, 6),
        (TWO, 1, 4, 1, 6),
        (TWO, 1, 4, 0, 6),
        (TWO, 1, 4, 2, 2),
        (TWO, 1, 4, 3, 2),
        # a budget smaller than one step: only the minimum is kept
        ("u10 a50 a50", 1, 5, 1, 2),
        ("u10 a50 a50", 1, 5, 2, 0),
        ("u10 a50 a50", 1, 99, 1, 2),
        ("u10 a50 a50", 1, 100, 1, 0),
        ("u10 a50 a50", 1, 110, 1, 0),
        # messages before the first user message are a turn of their own
        ("s5 a5 u10 a5", 1, BIG, 1, 2),
        ("s5 a5 u10 a5", 2, BIG, 1, 0),
        # tool results with no assistant before them start a step of their own
        ("t5 t5 u1", 2, 1, 1, 2),
        ("t5 t5 u1", 2, 11, 1, 0),
        # a call still open at the end is kept whatever the rule says
        ("u10 c5", 0, BIG, 1, 1),
        ("u10 c5", 1, BIG, 1, 0),
        ("u10 c5", 1, 1, 1, 0),
        ("u10 c5 a1 c5", 1, 1, 1, 3),
        # a call left open before a user message stays with that user message
        ("u10 c5 u10 a5", 1, BIG, 1, 1),
        ("u10 c5 u10 a5", 1, 5, 1, 1),
        # nothing live
        ("", 1, BIG, 1, 0),
        ("", 0, BIG, 1, 0),
    ],
)
def test_kept_tail_start(spec: str, turns: int, budget: int, min_steps: int, start: int) -> None:
    messages = rows(spec) if spec else []
    assert kept_tail_start(messages, TurnRetention(turns, budget, min_steps)) == start


def test_steps_and_turns() -> None:
    messages = rows(THREE)
    assert boundaries(messages) == [0, 1, 2, 3, 6, 7, 8, 9]
    assert turn_starts(messages) == [0, 2, 7]
    assert boundaries(rows("t1 t1 c1 t1")) == [0, 2, 4]
    assert boundaries(rows("u1 c1")) == [0, 1]
    assert boundaries([]) == [0]
    assert turn_starts(rows("a1 u1")) == [0, 1]
