"""The pure assembly rules as tables: reserve, layer, tool groups, fitting, reduction, outgoing.

No database. Property tests throw random conversations and budgets at ``assemble`` (and at
``fill``) and check every list they produce with the same validator the local OpenAI-compatible
server uses.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.context.assembly import CUT_NOTE, Assembly, Hint, Window, assemble
from app.context.budget import MAX_TOKEN_BUDGET, Budget, InvalidBudget, plan_budget, reply_reserve
from app.context.clearing import Clearing
from app.context.fill import NOTHING_FILLED, choose_fill, fill_room, with_fill
from app.context.hint import ArchiveRange, listed_archives, system_prompt_addition
from app.context.outgoing import outgoing
from app.context.pinned import PINNED_HEADER
from app.context.summary import (
    REDUCTION_ORDER,
    SECTION_CUT_MARKER,
    SUMMARY_HEADER,
    CutKind,
    summarise_legacy,
    summarise_sections,
)
from app.context.units import DropReason, Unit, fit_units, group_units
from app.pins.records import Pin
from app.wm.sections import Section
from app.wm.tokens import count_tokens
from tests.support.assembly import (
    candidates,
    full_sections,
    message,
    same_hint,
    stored,
    summarised,
    words,
)
from tests.support.fake_openai import check_chat_request

# Reserve and layer -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("budget", "reserved"),
    [
        (1, 0),
        (2, 1),
        (1_000, 500),  # half the budget: 15 % and the 20 000 floor are both above it
        (39_999, 19_999),
        (40_000, 20_000),  # the floor and the half meet
        (100_000, 20_000),  # the floor: 15 % is 15 000
        (128_000, 20_000),
        (133_333, 20_000),  # 15 % is 19 999.95, rounded down, still below the floor
        (133_340, 20_001),
        (140_000, 21_000),
        (200_000, 30_000),
        (1_000_000, 150_000),
    ],
)
def test_reply_reserve(budget: int, reserved: int) -> None:
    assert reply_reserve(budget) == reserved
    assert plan_budget(budget).reserved == reserved


@pytest.mark.parametrize(
    ("budget", "reserve", "usable", "layer"),
    [
        # The layer is all of the usable budget up to the cap; the unsummarised messages take
        # their room from it first (assembly).
        (1_000, None, 500, 500),
        (20_000, None, 10_000, 8_000),
        (128_000, None, 108_000, 8_000),  # the familiar 8k layer
        (200_000, None, 170_000, 8_000),
        (8_000, 0, 8_000, 8_000),  # usable meets the cap exactly
        (7_999, 0, 7_999, 7_999),
        (8_001, 0, 8_001, 8_000),
        (1_000, 0, 1_000, 1_000),
        (1_000, 999, 1, 1),
        (10, 3, 7, 7),
    ],
)
def test_usable_budget_and_layer(budget: int, reserve: int | None, usable: int, layer: int) -> None:
    planned = plan_budget(budget, reserve)
    assert (planned.usable, planned.wm_layer) == (usable, layer)


@pytest.mark.parametrize(
    ("budget", "reserve", "field"),
    [
        (0, None, "token_budget"),
        (-5, None, "token_budget"),
        (MAX_TOKEN_BUDGET + 1, None, "token_budget"),
        (1_000, 1_000, "reserve_tokens"),
        (1_000, 1_001, "reserve_tokens"),
        (1_000, -1, "reserve_tokens"),
    ],
)
def test_invalid_budgets(budget: int, reserve: int | None, field: str) -> None:
    with pytest.raises(InvalidBudget) as raised:
        plan_budget(budget, reserve)
    assert raised.value.field_name == field


# Tool groups ----------------------------------------------------------------------------------


def spans(units: Sequence[Unit]) -> list[tuple[int, ...]]:
    return [tuple(member.seq for member in unit.members) for unit in units]


ORPHAN = DropReason.ORPHAN_TOOL_RESULT
UNANSWERED = DropReason.UNANSWERED_TOOL_CALLS
AWAITING = DropReason.AWAITING_TOOL_RESULTS
INVALID = DropReason.INVALID_TOOL_CALLS


@pytest.mark.parametrize(
    ("codes", "complete", "units", "dropped"),
    [
        (["u", "a"], True, [(1,), (2,)], []),
        (["u", "c:1,2", "t:1", "t:2", "a"], True, [(1,), (2, 3, 4), (5,)], []),
        (["u", "c:1,2", "t:2", "t:1"], True, [(1,), (2, 3, 4)], []),
        (["u", "c:1", "u"], True, [(1,), (3,)], [(2, UNANSWERED)]),
        (["u", "c:1"], True, [(1,)], [(2, AWAITING)]),
        (["u", "c:1,2", "t:1"], True, [(1,)], [(2, AWAITING), (3, AWAITING)]),
        (["u", "c:1,2", "t:1", "u"], True, [(1,), (4,)], [(2, UNANSWERED), (3, UNANSWERED)]),
        (["t:9", "u"], True, [(2,)], [(1, ORPHAN)]),
        # A run that does not start at the summary: its leading results belong to an older call.
        (["t:9", "t:8", "u"], False, [(3,)], []),
        (["u", "c:1", "t:1", "t:1"], True, [(1,), (2, 3)], [(4, ORPHAN)]),
        (["c:1,1", "t:1", "t:1"], True, [], [(1, INVALID), (2, ORPHAN), (3, ORPHAN)]),
        (["u", "c:1", "a", "t:1"], True, [(1,), (3,)], [(2, UNANSWERED), (4, ORPHAN)]),
        (["s", "c:1", "t:1", "c:2", "t:2"], True, [(1,), (2, 3), (4, 5)], []),
    ],
)
def test_group_units(
    codes: list[str],
    complete: bool,
    units: list[tuple[int, ...]],
    dropped: list[tuple[int, DropReason]],
) -> None:
    found, drops = group_units(candidates(codes), complete=complete)
    assert spans(found) == units
    assert [(item.seq, item.reason) for item in drops] == dropped


# Fitting --------------------------------------------------------------------------------------


def units_of(spec: Sequence[tuple[str, int]]) -> list[Unit]:
    return [Unit((stored(seq, message(code), n),)) for seq, (code, n) in enumerate(spec, 1)]


@pytest.mark.parametrize(
    ("spec", "budget", "kept", "over"),
    [
        ([("u", 10), ("a", 10)], 20, [1, 2], False),
        ([("u", 10), ("a", 10)], 19, [1], False),  # the reply goes, the user message stays
        ([("u", 10), ("a", 10), ("u", 10), ("a", 10)], 25, [3, 4], False),
        ([("u", 10), ("a", 10), ("u", 10), ("a", 10)], 40, [1, 2, 3, 4], False),
        ([("u", 10), ("a", 10), ("u", 10), ("a", 10)], 39, [2, 3, 4], False),
        # The newest units after the user message do not all fit: a gap, never older units.
        ([("u", 10), ("a", 10), ("u", 10), ("a", 50), ("a", 5)], 25, [3, 5], False),
        ([("u", 5), ("a", 100), ("a", 5)], 50, [1, 3], False),
        ([("a", 5), ("u", 100)], 50, [2], True),
        ([("u", 100)], 0, [1], True),
        ([("a", 10), ("a", 10), ("a", 10)], 25, [2, 3], False),
        # A unit that does not fit stops the walk: the smaller one before it stays out.
        ([("a", 1), ("a", 30), ("a", 1)], 25, [3], False),
        ([], 100, [], False),
    ],
)
def test_fit_units(spec: list[tuple[str, int]], budget: int, kept: list[int], over: bool) -> None:
    fit = fit_units(units_of(spec), budget)
    assert [unit.head.seq for unit in fit.included] == kept
    assert fit.over_budget is over
    assert fit.tokens == sum(spec[seq - 1][1] for seq in kept)


def test_a_tool_group_is_kept_or_left_out_whole() -> None:
    codes = ["u", "c:1,2", "t:1", "t:2", "a"]
    units, _ = group_units(candidates(codes, [5, 10, 10, 10, 5]), complete=True)
    assert spans(fit_units(units, 40).included) == [(1,), (2, 3, 4), (5,)]
    # 39 tokens: the 30-token group does not fit beside the reply, so it goes as a whole.
    assert spans(fit_units(units, 39).included) == [(1,), (5,)]


# The summary --------------------------------------------------------------------------------


EXPECTED_ORDER = [
    (CutKind.ITEMS, Section.FILES, 10),
    (CutKind.ITEMS, Section.KEY_FACTS, 15),
    (CutKind.SECTION, Section.SESSION_TITLE, 1),
    (CutKind.SECTION, Section.FILES, 21),  # the 20 kept items and the cut marker
    (CutKind.ITEMS, Section.KEY_FACTS, 13),  # the newest 12 kept
    (CutKind.ITEMS, Section.KEY_FACTS, 6),  # the newest 6 kept
    (CutKind.ITEMS, Section.KEY_FACTS, 3),  # the newest 3 kept
    (CutKind.SECTION, Section.KEY_FACTS, 4),  # the 3 kept items and the cut marker
    (CutKind.SECTION, Section.TASK_AND_GOALS, 2),
    (CutKind.SECTION, Section.CURRENT_STATE, 1),
    (CutKind.SECTION, Section.ERRORS, 1),
    (CutKind.SECTION, Section.OPEN_ISSUES, 1),
]


def test_reduction_order_is_the_documented_one() -> None:
    assert [(step.kind, step.section) for step in REDUCTION_ORDER] == [
        (kind, section) for kind, section, _ in EXPECTED_ORDER
    ]


def test_a_summary_that_fits_is_sent_whole() -> None:
    sections = full_sections()
    summary = summarise_sections(sections, 100_000, count_tokens)
    assert summary.cuts == ()
    assert summary.text is not None
    assert summary.text.startswith(f"{SUMMARY_HEADER}\n\n# Working Memory\n")
    assert summary.tokens == count_tokens(summary.text)
    exact = summarise_sections(sections, summary.tokens, count_tokens)
    assert exact.text == summary.text


def test_reduction_follows_the_order_as_the_layer_shrinks() -> None:
    sections = full_sections()
    full = summarise_sections(sections, 100_000, count_tokens).tokens
    previous = -1
    seen_omitted = False
    for layer in range(full, -1, -1):
        summary = summarise_sections(sections, layer, count_tokens)
        if summary.text is None:
            seen_omitted = True
            continue
        assert not seen_omitted, "a smaller layer fitted a summary a larger one could not"
        assert summary.tokens <= layer
        assert summary.tokens == count_tokens(summary.text)
        cuts = [(cut.kind, cut.section, cut.removed) for cut in summary.cuts]
        assert cuts == EXPECTED_ORDER[: len(cuts)]
        assert len(cuts) >= previous
        previous = len(cuts)
        for kind, section, _ in EXPECTED_ORDER[: len(cuts)]:
            assert f"## {section.value}" in summary.text, "a cut section keeps its header"
            if kind is CutKind.SECTION:
                assert f"## {section.value}\n{SECTION_CUT_MARKER}" in summary.text
    assert seen_omitted
    assert previous == len(EXPECTED_ORDER)


def test_item_cuts_keep_the_first_files_and_the_newest_facts() -> None:
    sections = full_sections()
    full = summarise_sections(sections, 100_000, count_tokens).tokens
    summary = summarise_sections(sections, full - 1, count_tokens)
    assert [(cut.kind, cut.section) for cut in summary.cuts] == [(CutKind.ITEMS, Section.FILES)]
    assert summary.text is not None
    assert "src/billing/module_20.py" in summary.text
    assert "src/billing/module_21.py" not in summary.text
    assert "- [cut: 10 more items, to fit the token budget]" in summary.text

    after_files = summary.tokens - summary.brief_tokens
    both = summarise_sections(sections, after_files - 1, count_tokens)
    assert both.text is not None
    assert [cut.section for cut in both.cuts] == [Section.FILES, Section.KEY_FACTS]
    assert "fact number 15 about" not in both.text
    assert "fact number 16 about" in both.text
    assert "fact number 40 about" in both.text
    assert both.text.index("[cut: 15 older items") < both.text.index("fact number 16 about")


@pytest.mark.parametrize(
    ("halvings", "kept", "marker"),
    [(1, 12, "[cut: 28 older items"), (2, 6, "[cut: 34 older items"),
     (3, 3, "[cut: 37 older items")],
)  # fmt: skip
def test_key_facts_lose_their_oldest_items_before_the_whole_section(
    halvings: int, kept: int, marker: str
) -> None:
    sections = full_sections()
    layer = summarise_sections(sections, 100_000, count_tokens).tokens
    summary = summarise_sections(sections, layer, count_tokens)
    while len([c for c in summary.cuts if c.section is Section.KEY_FACTS]) < 1 + halvings:
        layer = summary.tokens - 1
        summary = summarise_sections(sections, layer, count_tokens)
    assert summary.text is not None
    assert marker in summary.text, "the marker counts every older item cut so far"
    assert summary.text.count("older items") == 1, "one marker, however many cuts"
    facts = [n for n in range(1, 41) if f"fact number {n} about" in summary.text]
    assert facts == list(range(41 - kept, 41))


def test_steps_with_nothing_to_cut_are_skipped() -> None:
    sections = {**full_sections(), Section.FILES: "- a.py", Section.SESSION_TITLE: ""}
    full = summarise_sections(sections, 100_000, count_tokens).tokens
    cuts = summarise_sections(sections, full - 1, count_tokens).cuts
    assert [(cut.kind, cut.section) for cut in cuts] == [(CutKind.ITEMS, Section.KEY_FACTS)]
    deeper = summarise_sections(sections, full // 3, count_tokens).cuts
    assert (CutKind.SECTION, Section.SESSION_TITLE) not in [(c.kind, c.section) for c in deeper]


@pytest.mark.parametrize("layer", [0, -3, 5])
def test_no_summary_when_not_even_its_skeleton_fits(layer: int) -> None:
    assert summarise_sections(full_sections(), layer, count_tokens).text is None


def test_legacy_text_keeps_its_leading_lines() -> None:
    text = "\n".join(f"line {i} of the old overview" for i in range(1, 101))
    whole = summarise_legacy(text, 10_000, words)
    assert whole.cuts == ()
    assert whole.text == f"{SUMMARY_HEADER}\n\n{text}\n"
    # 3 words of header, 6 per line, 9 of marker: 8 lines fit in 60.
    cut = summarise_legacy(text, 60, words)
    assert cut.text is not None
    assert cut.tokens <= 60
    assert cut.tokens == words(cut.text)
    assert [(c.kind, c.removed) for c in cut.cuts] == [(CutKind.TEXT, 92)]
    assert "line 8 of" in cut.text
    assert "line 9 of" not in cut.text
    assert cut.text.rstrip().endswith("[cut: 92 more lines, to fit the token budget]")
    assert summarise_legacy(text, 10, words).text is None
    assert summarise_legacy(text, 0, words).text is None


# Outgoing messages ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stored", "sent", "changed"),
    [
        ({"role": "user", "content": "hi"}, {"role": "user", "content": "hi"}, False),
        (
            {"role": "user", "content": "hi", "name": "Caroline"},
            {"role": "user", "content": "hi", "name": "Caroline"},
            False,
        ),
        (
            {"role": "user", "content": "hi", "name": "Caroline Smith"},
            {"role": "user", "content": "hi"},
            True,
        ),
        (
            {"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": "ok"},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            True,
        ),
        (
            {"role": "assistant", "content": "x", "tool_calls": []},
            {"role": "assistant", "content": "x"},
            True,
        ),
        (
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "index": 0,
                        "function": {"name": "f", "arguments": "{}", "parsed": {}},
                    }
                ],
                "reasoning": "internal",
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            True,
        ),
        (
            {"role": "system", "content": "be brief", "metadata": {"k": 1}},
            {"role": "system", "content": "be brief"},
            True,
        ),
    ],
)
def test_outgoing(stored: dict[str, Any], sent: dict[str, Any], changed: bool) -> None:
    assert outgoing(stored) == (sent, changed)


# The hint ---------------------------------------------------------------------------------------


def test_hint_names_the_summary_the_unsummarised_archives_and_the_expand_endpoint() -> None:
    index = [ArchiveRange(n, 40 * n - 39, 40 * n) for n in range(14, 0, -1)]
    text = system_prompt_addition(
        "S", summary_archive=ArchiveRange(12, 1, 480), index=index, listed=3
    )
    assert "lossy summary of messages 1-480 (the working memory after archive 12)" in text
    assert "Archives 13-14 (messages 481-560) are not summarised yet" in text
    assert "archives (14 = messages 521-560, 13 = 481-520, 12 = 441-480, and older)" in text
    assert "GET /v1/sessions/S/archives/{archive_seq}" in text
    assert "the same session's /history/search?q={words}" in text, "history search, beside it"
    assert text.count("/v1/sessions/S") == 1, "the session id is written once"
    one = system_prompt_addition(
        "S", summary_archive=ArchiveRange(13, 1, 520), index=index, listed=3
    )
    assert "Archive 14 (messages 521-560) is not summarised yet" in one
    done = system_prompt_addition(
        "S", summary_archive=ArchiveRange(2, 1, 80), index=index[-2:], listed=3
    )
    assert "not summarised" not in done
    assert "(2 = messages 41-80, 1 = 1-40)" in done
    left_out = system_prompt_addition(
        "S", summary_archive=ArchiveRange(12, 1, 480), index=index, listed=3, summary_sent=False
    )
    assert left_out.startswith(
        "Messages 1-480 of this conversation are summarised (the working memory after archive "
        "12), but the summary was left out to fit the token budget."
    )
    assert "[Session History Summary]" not in left_out
    assert "raw messages are shown from the newest back" in left_out
    assert system_prompt_addition("S", summary_archive=None, index=[], listed=3) == ""
    raw = system_prompt_addition("S", summary_archive=None, index=index[-1:], listed=3)
    assert raw.startswith("Messages 1-40 of this conversation are archived but not summarised")
    for hint in (one, done, left_out, raw):
        assert hint.endswith("call the same session's /history/search?q={words}.")


@pytest.mark.parametrize(("usable", "listed"), [(1, 3), (7_500, 3), (10_000, 4), (108_000, 20)])
def test_listed_archives(usable: int, listed: int) -> None:
    assert listed_archives(usable) == listed


# Whole assembly -------------------------------------------------------------------------------


def test_the_newest_user_message_outranks_the_summary() -> None:
    window = Window(candidates(["u", "a", "u"], [10, 10, 300]), floor_seq=0, last_seq=3)
    source = summarised(full_sections())
    roomy = assemble(
        Budget(2_000, 1_000),
        window,
        working_memory=source,
        hint=same_hint(""),
        counter=count_tokens,
    )
    assert roomy.summary is not None
    assert roomy.summary.text is not None
    assert roomy.included_seqs == (1, 2, 3)
    tight = assemble(
        Budget(1_000, 500), window, working_memory=source, hint=same_hint(""), counter=count_tokens
    )
    assert tight.wm_layer == 500 - 320, "the unsummarised messages take their room first"
    assert tight.summary is not None
    assert tight.summary.text is not None
    assert tight.summary.cuts
    assert tight.wm_tokens <= 180
    assert tight.included_seqs == (1, 2, 3)
    assert tight.total <= 500
    noted = assemble(
        Budget(1_000, 500),
        window,
        working_memory=source,
        hint=same_hint("hint"),
        counter=count_tokens,
    )
    assert noted.system_prompt_addition == f"hint {CUT_NOTE}", "cuts are explained"
    assert roomy.system_prompt_addition == ""
    plain = assemble(
        Budget(4_000, 0),
        window,
        working_memory=source,
        hint=same_hint("hint"),
        counter=count_tokens,
    )
    assert plain.system_prompt_addition == "hint", "no cut, no note"
    alone = assemble(
        Budget(500, 250),
        window,
        working_memory=source,
        hint=Hint("a hint", "b"),
        counter=count_tokens,
    )
    assert alone.over_budget
    assert alone.hint_omitted
    assert alone.summary is not None
    assert alone.summary.text is None
    assert alone.messages == [{"role": "user", "content": "u"}]
    assert alone.omitted == ((1, 2),)


@pytest.mark.parametrize(
    ("tail", "layer", "sent"),
    [
        # The unsummarised messages take their room first; the summary gets what they leave.
        ([100, 100, 100], 700, (1, 2, 3)),
        ([100, 200, 300], 400, (1, 2, 3)),
        # Never less than a quarter of the budget: the oldest unsummarised messages give way.
        ([200, 300, 400], 250, (2, 3)),
        ([300, 300, 600], 250, (3,)),
        # The newest user message goes in before anything else, the floor included.
        ([10, 10, 990], 10, (2, 3)),
    ],
)
def test_the_summary_takes_the_room_the_unsummarised_messages_leave(
    tail: list[int], layer: int, sent: tuple[int, ...]
) -> None:
    window = Window(candidates(["u", "a", "u"], tail), floor_seq=0, last_seq=3)
    assembly = assemble(
        Budget(1_000, 0),
        window,
        working_memory=summarised(full_sections()),
        hint=same_hint(""),
        counter=count_tokens,
    )
    assert assembly.wm_layer == layer
    assert assembly.wm_tokens <= layer
    assert assembly.included_seqs == sent
    assert assembly.total <= 1_000 or assembly.over_budget


def test_a_summary_left_out_switches_the_hint_to_the_text_that_says_so() -> None:
    window = Window(candidates(["a", "u"], [10, 480]), floor_seq=0, last_seq=2)
    source = summarised(full_sections())
    hint = Hint("summary opens the messages", "summary left out")
    result = assemble(Budget(1_000, 500), window, working_memory=source, hint=hint, counter=words)
    assert result.summary is not None
    assert result.summary.text is None
    assert result.system_prompt_addition == "summary left out"
    assert result.hint_tokens == 3
    assert not result.hint_omitted
    assert result.total <= 500
    kept = assemble(Budget(4_000, 500), window, working_memory=source, hint=hint, counter=words)
    assert kept.system_prompt_addition == "summary opens the messages"


# Property: random conversations, random budgets --------------------------------------------------


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    ids = iter(range(10_000))
    for kind in draw(st.lists(st.sampled_from("uuasgGo"), max_size=30)):
        if kind in "uas":
            messages.append(message(kind))
        elif kind in "gG":
            calls = [str(next(ids)) for _ in range(draw(st.integers(1, 3)))]
            messages.append(message("c:" + ",".join(calls)))
            answered = calls if kind == "g" else calls[: draw(st.integers(0, len(calls) - 1))]
            messages.extend(message(f"t:{call}") for call in draw(st.permutations(answered)))
        else:
            messages.append(message(f"t:{next(ids)}"))
    return messages


@settings(max_examples=300, deadline=None)
@given(
    conversation=conversations(),
    tokens=st.lists(st.integers(0, 400), min_size=60, max_size=60),
    budget=st.integers(1, 4_000),
    start=st.integers(0, 5),
    with_summary=st.booleans(),
    pin_sizes=st.lists(st.integers(1, 80), max_size=4),
    keep=st.none() | st.integers(0, 4),
)
def test_every_assembled_list_is_accepted_and_within_budget(
    conversation: list[dict[str, Any]],
    tokens: list[int],
    budget: int,
    start: int,
    with_summary: bool,
    pin_sizes: list[int],
    keep: int | None,
) -> None:
    floor = 100
    cands = [stored(floor + i + 1, m, tokens[i % len(tokens)]) for i, m in enumerate(conversation)]
    last_seq = floor + len(cands)
    window = Window(cands[start:], floor, last_seq)
    source = summarised(full_sections()) if with_summary else None
    pins = [pin("word " * size) for size in pin_sizes]
    clearing = None if keep is None else Clearing(keep, "/v1/sessions/s/messages")
    result = assemble(
        plan_budget(budget),
        window,
        working_memory=source,
        hint=same_hint("h i n t"),
        counter=words,
        pins=pins,
        clearing=clearing,
    )
    assert_pins_and_clearing(result, pins, clearing, window)

    check_chat_request(
        {"model": "m", "messages": [{"role": "system", "content": "s"}, *result.messages]}
    )
    if result.messages:
        assert result.messages[0]["role"] != "tool"
    usable = plan_budget(budget).usable
    units, _ = group_units(window.candidates, complete=window.complete)
    users = [unit for unit in units if unit.is_user]
    if users:
        assert users[-1].head.seq in result.included_seqs
    if result.over_budget:
        assert result.included_seqs == (users[-1].head.seq,)
        assert result.wm_tokens == result.hint_tokens == result.pinned.tokens == 0
    else:
        assert result.total <= usable
    kept = [i for i, unit in enumerate(units) if unit.head.seq in result.included_seqs]
    forced = max((i for i, unit in enumerate(units) if unit.is_user), default=None)
    n = len(units)
    if forced is None:
        assert kept == list(range(n - len(kept), n)), "not a newest-first run"
    else:
        after = [i for i in kept if i > forced]
        before = [i for i in kept if i < forced]
        assert after == list(range(n - len(after), n)), "not a newest-first run"
        assert before == list(range(forced - len(before), forced)), "a gap before the user"
        if before:
            assert len(after) == n - forced - 1, "an older unit went in, a newer one stayed out"
    accounted = set(result.included_seqs) | {d.seq for d in result.dropped}
    for first, last in result.omitted:
        accounted |= set(range(first, last + 1))
    assert accounted == set(range(floor + 1, last_seq + 1))


def pin(text: str) -> Pin:
    return Pin(uuid.uuid4(), text, None, None, words(text), uuid.uuid4(), datetime.now(UTC))


def assert_pins_and_clearing(
    result: Assembly, pins: Sequence[Pin], clearing: Clearing | None, window: Window
) -> None:
    """Pins are one block right after the summary, cut only when no section of the summary is
    sent; a cleared result is a placeholder of a tool message, never one of the newest kept."""
    heads = [m["content"] for m in result.messages[: result.head_messages]]
    assert [h.split("\n")[0] for h in heads] == [
        *(["[Session History Summary]"] if result.summary and result.summary.text else []),
        *([PINNED_HEADER] if result.pinned.text else []),
    ]
    assert len(result.pinned.included) + result.pinned.left_out == len(pins)
    assert result.pinned.included == tuple(pins[: len(result.pinned.included)])
    if result.pinned.left_out and result.summary is not None:
        assert result.summary.text is None
    by_seq = {m.seq: m for m in window.candidates}
    sent = dict(zip(result.included_seqs, result.messages[result.head_messages :], strict=True))
    if clearing is None:
        assert result.cleared == ()
        return
    placeholders = [seq for seq, m in sent.items() if str(m.get("content")).startswith("[tool r")]
    assert sorted(placeholders) == sorted(seq for seq, _ in result.cleared)
    for seq, saved in result.cleared:
        assert by_seq[seq].role == "tool"
        assert saved == by_seq[seq].token_count - words(sent[seq]["content"]) > 0
    results = [seq for seq, m in sent.items() if m["role"] == "tool"]
    whole = [seq for seq in results if seq not in dict(result.cleared)]
    newest = sorted(results)[-clearing.keep :] if clearing.keep else []
    assert set(newest) <= set(whole)
    assert result.tokens_saved == sum(saved for _, saved in result.cleared)


def contiguous_newest(units_tokens: list[int], room: int) -> int:
    """Tokens truncation fits in ``room``: the newest units, newest first, until one does not."""
    total = 0
    for tokens in reversed(units_tokens):
        if total + tokens > room:
            break
        total += tokens
    return total


@settings(max_examples=300, deadline=None)
@given(
    older=conversations(),
    newer=conversations(),
    tokens=st.lists(st.integers(0, 300), min_size=60, max_size=60),
    budget=st.integers(1, 4_000),
)
def test_a_filled_context_is_accepted_within_budget_and_at_least_truncation(
    older: list[dict[str, Any]], newer: list[dict[str, Any]], tokens: list[int], budget: int
) -> None:
    # A commit never splits a tool group, so the summary's boundary falls between units.
    floor = len(older)
    covered_messages = [stored(i + 1, m, tokens[i % 60]) for i, m in enumerate(older)]
    newest = [stored(floor + i + 1, m, tokens[(floor + i) % 60]) for i, m in enumerate(newer)]
    window = Window(newest, floor, floor + len(newest))
    planned = plan_budget(budget)
    result = assemble(
        planned,
        window,
        working_memory=summarised(full_sections()),
        hint=same_hint("h i n t"),
        counter=words,
    )
    room = fill_room(result, planned.usable)
    filled = with_fill(result, choose_fill(covered_messages, room))

    check_chat_request(
        {"model": "m", "messages": [{"role": "system", "content": "s"}, *filled.messages]}
    )
    if not filled.over_budget:
        assert filled.total <= planned.usable
    if room == 0:
        assert filled.filled == ()
        assert choose_fill(covered_messages, 0) == NOTHING_FILLED
        return
    # Filled messages are the newest covered units: a run that ends at the boundary.
    covered_units, _ = group_units(covered_messages, complete=True)
    sent = {m.seq for m in filled.filled}
    kept_units = [unit for unit in covered_units if unit.head.seq in sent]
    assert kept_units == covered_units[len(covered_units) - len(kept_units) :]
    # At least as much raw text as truncation fits in the room the summary leaves.
    unsummarised, _ = group_units(newest, complete=True)
    raw_room = planned.usable - filled.hint_tokens - filled.wm_tokens
    every_unit = [unit.tokens for unit in covered_units + unsummarised]
    assert filled.message_tokens + filled.filled_tokens >= contiguous_newest(every_unit, raw_room)


@settings(max_examples=200, deadline=None)
@given(
    older=conversations(),
    newer=conversations(),
    tokens=st.lists(st.integers(0, 300), min_size=60, max_size=60),
    budget=st.integers(1, 4_000),
    keep=st.integers(0, 3),
)
def test_clearing_sends_at_least_as_much_history_within_the_same_budget(
    older: list[dict[str, Any]],
    newer: list[dict[str, Any]],
    tokens: list[int],
    budget: int,
    keep: int,
) -> None:
    floor = len(older)
    covered_messages = [stored(i + 1, m, tokens[i % 60]) for i, m in enumerate(older)]
    newest = [stored(floor + i + 1, m, tokens[(floor + i) % 60]) for i, m in enumerate(newer)]
    window = Window(newest, floor, floor + len(newest))
    planned = plan_budget(budget)

    def filled(clearing: Clearing | None) -> Assembly:
        result = assemble(
            planned,
            window,
            working_memory=summarised(full_sections()),
            hint=same_hint("h i n t"),
            counter=words,
            clearing=clearing,
        )
        chosen = choose_fill(
            covered_messages,
            fill_room(result, planned.usable),
            clearing=clearing,
            kept_before=result.kept_whole,
            counter=words,
        )
        return with_fill(result, chosen)

    plain, cleared = filled(None), filled(Clearing(keep, "/v1/sessions/s/messages"))
    check_chat_request(
        {"model": "m", "messages": [{"role": "system", "content": "s"}, *cleared.messages]}
    )
    if not cleared.over_budget:
        assert cleared.total <= planned.usable
    assert len(cleared.messages) >= len(plain.messages)
    assert len(cleared.filled) >= len(plain.filled)
    # Across the filled and the unsummarised messages, the newest ``keep`` results stay whole.
    sent = [*cleared.filled, *(m for m in newest if m.seq in cleared.included_seqs)]
    results = [m.seq for m in sent if m.role == "tool"]
    gone = {seq for seq, _ in cleared.cleared}
    assert not gone & set(results[len(results) - keep :] if keep else [])
    assert cleared.tokens_saved == sum(saved for _, saved in cleared.cleared)
