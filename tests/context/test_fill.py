"""Fill, pure: when there is room, which covered messages take it, and where they go.

Tables of ``fill_room`` and ``choose_fill`` and the placement of ``with_fill``; the property test
of filled contexts is with the other property tests in ``test_assembly``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from app.context.assembly import Window, assemble
from app.context.budget import Budget
from app.context.fill import NOTHING_FILLED, Filled, choose_fill, fill_room, with_fill
from app.sessions.records import StoredMessage
from tests.support.assembly import candidates, message, same_hint, stored, summarised, words


def covered(codes: list[str], tokens: list[int]) -> list[StoredMessage]:
    return candidates(codes, tokens)


@pytest.mark.parametrize(
    ("codes", "tokens", "room", "kept"),
    [
        (["u", "a", "u", "a"], [5, 5, 5, 5], 20, [1, 2, 3, 4]),
        (["u", "a", "u", "a"], [5, 5, 5, 5], 19, [2, 3, 4]),
        (["u", "a", "u", "a"], [5, 5, 5, 5], 4, []),
        # A tool group goes whole or not at all, and one that does not fit stops the walk.
        (["u", "c:1,2", "t:1", "t:2", "a"], [1, 5, 5, 5, 1], 15, [5]),
        (["u", "c:1,2", "t:1", "t:2", "a"], [1, 5, 5, 5, 1], 16, [2, 3, 4, 5]),
        (["u", "a", "u", "a"], [1, 30, 1, 1], 25, [3, 4]),
        # Results whose call is older than what was read are not a unit.
        (["t:9", "u", "a"], [1, 1, 1], 10, [2, 3]),
        # A message no server accepts is never sent and does not stop the walk.
        (["u", "t:7", "a"], [1, 1, 1], 10, [1, 3]),
        ([], [], 100, []),
    ],
)
def test_choose_fill(codes: list[str], tokens: list[int], room: int, kept: list[int]) -> None:
    filled = choose_fill(covered(codes, tokens), room)
    assert list(filled.seqs) == kept
    assert filled.tokens == sum(tokens[seq - 1] for seq in kept)
    assert filled.tokens <= room


def assembled(budget: int, codes: list[str], tokens: list[int], floor: int = 10) -> Any:
    window = Window(
        [
            stored(floor + i + 1, message(c), n)
            for i, (c, n) in enumerate(zip(codes, tokens, strict=True))
        ],
        floor,
        floor + len(codes),
    )
    return assemble(
        Budget(budget, 0),
        window,
        working_memory=summarised({}),
        hint=same_hint("h i n t"),
        counter=words,
    )


def test_the_room_is_what_is_left_when_everything_else_is_in() -> None:
    result = assembled(100, ["u", "a"], [5, 5])
    assert result.summary is not None
    assert result.summary.text is not None
    assert fill_room(result, 100) == 100 - result.total > 0
    assert fill_room(result, result.total) == 0


def test_no_room_without_a_summary_or_with_unsummarised_messages_left_out() -> None:
    window = Window(candidates(["u", "a"], [5, 5]), 0, 2)
    plain = assemble(Budget(100, 0), window, working_memory=None, hint=same_hint(""), counter=words)
    assert fill_room(plain, 100) == 0
    crowded = assembled(200, ["u", "a", "u", "a"], [100, 100, 5, 5])
    assert crowded.summary is not None
    assert crowded.summary.text is not None
    assert crowded.omitted
    assert fill_room(crowded, 200) == 0
    skeleton_only = assembled(30, ["u"], [5])
    assert skeleton_only.summary is not None
    assert skeleton_only.summary.text is None, "not even the seven headers fit"
    assert fill_room(skeleton_only, 30) == 0
    over = replace(assembled(100, ["u"], [5]), over_budget=True)
    assert fill_room(over, 100) == 0


def test_filled_messages_go_between_the_summary_and_the_unsummarised_ones() -> None:
    result = assembled(100, ["u", "a"], [5, 5])
    tool_name = {"role": "tool", "tool_call_id": "id1", "name": "lookup", "content": "r"}
    older = [stored(8, message("c:1"), 2), stored(9, tool_name, 2), stored(10, message("a"), 2)]
    filled = choose_fill(older, fill_room(result, 100))
    both = with_fill(result, filled)
    assert [m["role"] for m in both.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert both.messages[0] == result.messages[0]
    assert both.messages[-2:] == result.messages[1:]
    assert "name" not in both.messages[2], "sent as a strict server accepts it"
    assert both.sanitised == result.sanitised + 1
    assert both.filled_tokens == 6
    assert both.total == result.total + 6
    assert both.included_seqs == result.included_seqs
    assert with_fill(result, NOTHING_FILLED) is result
    assert Filled((), 0).seqs == ()
