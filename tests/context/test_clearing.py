"""Tool-result clearing and the ``[Pinned]`` block as tables, and both inside ``assemble``.

No database. A word counter (one token per whitespace-separated word) makes every threshold a
number a row can state: a placeholder here costs 14 words.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from app.context.assembly import Window, assemble
from app.context.budget import Budget
from app.context.clearing import (
    READ_BACK_TOKENS,
    Clearing,
    clear_units,
    excluded_tools,
    placeholder,
    read_back_cost,
)
from app.context.fill import choose_fill, fill_room, with_fill
from app.context.pinned import NO_PINS, PINNED_HEADER, PINNED_INTRO, pinned_block
from app.context.units import group_units
from app.pins.records import Pin
from app.sessions.records import StoredMessage
from app.wm.sections import Section
from tests.support.assembly import full_sections, same_hint, stored, summarised, words
from tests.support.fake_openai import check_chat_request

PATH = "/v1/sessions/s/messages"
PLACEHOLDER_WORDS = words(placeholder("bash", 100, 5, PATH))


def call(*calls: tuple[str, str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": id_, "type": "function", "function": {"name": name, "arguments": "{}"}}
            for id_, name in calls
        ],
    }


def result(id_: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": id_, "content": "output " * 3}


def history(sizes: list[int], tools: list[str] | None = None) -> list[StoredMessage]:
    """A user message, then one call with one result per size, tool ``tools[i]`` (``bash``)."""
    names = tools or ["bash"] * len(sizes)
    messages: list[StoredMessage] = [stored(1, {"role": "user", "content": "go"}, 1)]
    for index, (size, name) in enumerate(zip(sizes, names, strict=True)):
        seq = len(messages) + 1
        messages.append(stored(seq, call((f"c{index}", name)), 2))
        messages.append(stored(seq + 1, result(f"c{index}"), size))
    return messages


def cleared_seqs(sizes: list[int], keep: int, **options: Any) -> list[int]:
    units, _ = group_units(history(sizes, options.pop("tools", None)), complete=True)
    done = clear_units(units, Clearing(keep, PATH, **options), words)
    return sorted(done.saved)


def test_the_placeholder_names_the_tool_its_size_and_the_request_that_reads_it() -> None:
    text = placeholder("str_replace_editor", 1234, 42, "/v1/sessions/abc/messages")
    assert text == (
        "[tool result cleared: str_replace_editor returned 1234 tokens; read it in full with "
        "GET /v1/sessions/abc/messages?after_seq=41&limit=1]"
    )
    assert PLACEHOLDER_WORDS == 14


@pytest.mark.parametrize(
    ("sizes", "keep", "cleared"),
    [
        ([100, 100, 100], 3, []),  # keep equal to the results: nothing cleared
        ([100, 100, 100], 4, []),  # above
        ([100, 100, 100], 2, [3]),  # one below: the oldest
        ([100, 100, 100], 0, [3, 5, 7]),
        ([100, 100, 100], 1, [3, 5]),
        # A result no longer than its placeholder stays whole (and is not counted as kept).
        ([14, 15, 100], 1, [5]),
        ([13, 100, 100], 0, [5, 7]),
        ([15, 100, 100], 0, [3, 5, 7]),
    ],
)
def test_which_results_are_cleared(sizes: list[int], keep: int, cleared: list[int]) -> None:
    assert cleared_seqs(sizes, keep) == cleared


def test_excluded_tools_are_never_cleared_nor_counted_among_those_kept() -> None:
    tools = ["read", "bash", "read", "bash"]
    assert cleared_seqs([100] * 4, 0, tools=tools) == [3, 5, 7, 9]
    assert cleared_seqs([100] * 4, 0, tools=tools, excluded=frozenset({"read"})) == [5, 9]
    # keep 1: the newest bash result is kept, the read results do not use up the count.
    assert cleared_seqs([100] * 4, 1, tools=tools, excluded=frozenset({"read"})) == [5]


def test_a_cleared_result_keeps_its_group_valid_and_saves_its_tokens() -> None:
    messages = history([100, 200])
    units, _ = group_units(messages, complete=True)
    done = clear_units(units, Clearing(0, PATH), words)
    assert done.saved == {3: 100 - PLACEHOLDER_WORDS, 5: 200 - PLACEHOLDER_WORDS}
    assert done.kept == 0
    sent = [member.message for unit in done.units for member in unit.members]
    check_chat_request({"model": "m", "messages": sent})
    assert sent[2] == {
        "role": "tool",
        "tool_call_id": "c0",
        "content": placeholder("bash", 100, 3, PATH),
    }
    # The stored message is never changed.
    assert messages[2].message["content"] == "output " * 3
    assert [m.token_count for unit in done.units for m in unit.members] == [
        1,
        2,
        PLACEHOLDER_WORDS,
        2,
        PLACEHOLDER_WORDS,
    ]


def test_results_of_one_call_are_counted_newest_first_and_kept_before_goes_on_counting() -> None:
    messages = [
        stored(1, {"role": "user", "content": "go"}, 1),
        stored(2, call(("a", "ls"), ("b", "cat")), 2),
        stored(3, result("a"), 50),
        stored(4, result("b"), 60),
    ]
    units, _ = group_units(messages, complete=True)
    assert sorted(clear_units(units, Clearing(1, PATH), words).saved) == [3]
    assert sorted(clear_units(units, Clearing(1, PATH), words, kept_before=1).saved) == [3, 4]
    assert clear_units(units, Clearing(2, PATH), words, kept_before=0).kept == 2
    named = clear_units(units, Clearing(0, PATH), words).units[1].members
    assert "cat returned 60 tokens" in named[2].message["content"]


def test_a_call_without_a_function_name_is_named_a_tool() -> None:
    messages = [
        stored(1, {"role": "user", "content": "go"}, 1),
        stored(2, {"role": "assistant", "tool_calls": [{"id": "x", "type": "function"}]}, 2),
        stored(3, result("x"), 50),
    ]
    units, _ = group_units(messages, complete=True)
    done = clear_units(units, Clearing(0, PATH), words)
    assert (
        done.units[1]
        .members[1]
        .message["content"]
        .startswith("[tool result cleared: a tool returned 50")
    )


@pytest.mark.parametrize(
    ("values", "names"),
    [
        ([], set()),
        (["bash"], {"bash"}),
        (["bash,read", " edit "], {"bash", "read", "edit"}),
        (["", " , "], set()),
    ],
)
def test_excluded_tools(values: list[str], names: set[str]) -> None:
    assert excluded_tools(values) == frozenset(names)


@pytest.mark.parametrize(
    ("role", "tokens", "clearing", "cost"),
    [
        ("tool", 1000, None, 1000),
        ("tool", 1000, Clearing(0, PATH), READ_BACK_TOKENS),
        ("tool", 5, Clearing(0, PATH), 5),
        ("user", 1000, Clearing(0, PATH), 1000),
    ],
)
def test_read_back_cost(role: str, tokens: int, clearing: Clearing | None, cost: int) -> None:
    message = stored(1, {"role": role, "content": "x", "tool_call_id": "c"}, tokens)
    assert read_back_cost(message, clearing) == cost
    assert read_back_cost(message, clearing) <= tokens


def test_clearing_makes_room_for_older_history_within_the_same_budget() -> None:
    messages = history([300, 300, 300, 300])
    last = messages[-1].seq
    budget = Budget(1_000, 0)
    whole = assemble(
        budget, Window(messages, 0, last), working_memory=None, hint=same_hint(""), counter=words
    )
    cleared = assemble(
        budget,
        Window(messages, 0, last),
        working_memory=None,
        hint=same_hint(""),
        counter=words,
        clearing=Clearing(1, PATH),
    )
    assert len(whole.included_seqs) < len(cleared.included_seqs) == len(messages)
    assert cleared.message_tokens == 1 + 4 * 2 + 300 + 3 * PLACEHOLDER_WORDS
    assert cleared.tokens_saved == 3 * (300 - PLACEHOLDER_WORDS)
    assert [seq for seq, _ in cleared.cleared] == [3, 5, 7]
    assert cleared.total <= budget.usable


def test_with_fill_the_saved_room_goes_to_more_covered_history() -> None:
    covered = history([300] * 6)
    floor = covered[-1].seq
    newest = [stored(floor + 1, {"role": "user", "content": "next"}, 1)]
    budget = Budget(2_000, 0)

    def filled(clearing: Clearing | None) -> Any:
        result = assemble(
            budget,
            Window(newest, floor, floor + 1),
            working_memory=summarised(full_sections()),
            hint=same_hint("h"),
            counter=words,
            clearing=clearing,
        )
        room = fill_room(result, budget.usable)
        kept = result.kept_whole
        chosen = choose_fill(covered, room, clearing=clearing, kept_before=kept, counter=words)
        return with_fill(result, chosen)

    plain, clearing = filled(None), filled(Clearing(2, PATH))
    assert len(clearing.filled) > len(plain.filled)
    assert clearing.total <= budget.usable
    check_chat_request({"model": "m", "messages": clearing.messages})
    # The newest two results of the covered history are whole, the older ones cleared.
    whole = [m.seq for m in clearing.filled if m.role == "tool" and m.token_count == 300]
    assert whole == [11, 13]
    assert clearing.tokens_saved == sum(saved for _, saved in clearing.cleared) > 0


# The [Pinned] block ---------------------------------------------------------------------------


def pin(text: str, *, seq: int | None = None, section: Section | None = None) -> Pin:
    return Pin(
        pin_id=uuid.uuid4(),
        text=text,
        message_seq=seq,
        section=section,
        token_count=words(text),
        pinned_by=uuid.uuid4(),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("made", "line"),
    [
        (pin("Never deploy on Fridays"), "Never deploy on Fridays"),
        (
            pin("Use UTC", section=Section.TASK_AND_GOALS),
            "(Task & Goals) Use UTC",
        ),
        (pin("ok then", seq=7), "(message 7, exact text) ok then"),
        (
            pin("ok then", seq=7, section=Section.KEY_FACTS),
            "(Key Facts & Decisions; message 7, exact text) ok then",
        ),
    ],
)
def test_a_pin_line(made: Pin, line: str) -> None:
    assert made.line == line


HEAD_WORDS = words(f"{PINNED_HEADER}\n{PINNED_INTRO}")


def cut_words(count: int) -> int:
    return len(f"- [cut: {count} more pin{'s' * (count != 1)}, to fit the token budget]".split())


@pytest.mark.parametrize(
    ("room_over_full", "included", "left_out"),
    [
        (0, 3, 0),  # exactly the room: all three
        (10, 3, 0),
        (-1, 2, 1),  # one below: the newest pin is cut, with its marked line
    ],
)
def test_pins_fit_in_their_order_each_whole(
    room_over_full: int, included: int, left_out: int
) -> None:
    pins = [pin("one " * 20), pin("two " * 20), pin("three " * 20)]
    full = HEAD_WORDS + 3 * 21
    block = pinned_block(pins, full + room_over_full, words)
    assert len(block.included) == included
    assert block.left_out == left_out
    assert block.text is not None
    assert block.tokens == words(block.text)
    assert block.text.startswith(f"{PINNED_HEADER}\n{PINNED_INTRO}\n- one one")
    if left_out:
        assert block.text.endswith("- [cut: 1 more pin, to fit the token budget]")


def test_no_pins_or_no_room_sends_no_block() -> None:
    assert pinned_block([], 1_000, words) == NO_PINS
    pins = [pin("one " * 20), pin("two " * 20)]
    smallest = HEAD_WORDS + 21 + cut_words(1)
    assert pinned_block(pins, smallest - 1, words).text is None
    assert pinned_block(pins, smallest - 1, words).left_out == 2
    assert len(pinned_block(pins, smallest, words).included) == 1


def test_pins_follow_the_summary_and_are_cut_only_after_every_section_of_it() -> None:
    messages = [stored(11, {"role": "user", "content": "next question"}, 2)]
    window = Window(messages, 10, 11)
    pins = [pin("Never deploy on Fridays"), pin("The database is Postgres 16")]
    block = pinned_block(pins, 1_000, words).tokens

    def assembled(layer: int) -> Any:
        # usable = 2 * layer; the layer is min(8 000, usable / 2): the newest message and the
        # hint take what is beyond it.
        return assemble(
            Budget(2 * layer, 0),
            window,
            working_memory=summarised(full_sections()),
            hint=same_hint(""),
            counter=words,
            pins=pins,
        )

    roomy = assembled(2_000)
    assert [m["content"].split("\n")[0] for m in roomy.messages[:2]] == [
        "[Session History Summary]",
        PINNED_HEADER,
    ]
    assert roomy.pinned.tokens == block
    assert roomy.total == roomy.wm_tokens + block + 2
    assert roomy.head_messages == 2
    for layer in range(block + 40, block - 3, -1):
        result = assembled(layer)
        assert result.total <= 2 * layer
        if result.pinned.left_out:
            # Not one section of the summary is sent beside a cut pin list.
            assert result.summary is not None
            assert result.summary.text is None
        elif result.summary is not None and result.summary.text is not None:
            assert result.pinned.included == tuple(pins)
    tight = assembled(block)
    assert tight.pinned.included == tuple(pins)
    assert tight.summary is not None
    assert tight.summary.text is None
    assert tight.messages[0]["content"].startswith(PINNED_HEADER)
