"""The evaluation's pure parts: anchors per source, finding them in a context, truncation, and
protected-item loss over a section history."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from app.replay.anchors import Anchor, anchors_of, words
from app.replay.formats import Conversation, ReplayFormat
from app.replay.protected import Loss, protected_losses
from app.replay.scoring import Haystack, Recall, recall, truncation
from app.sessions.records import StoredMessage
from app.wm.sections import Section


def test_locomo_anchors_are_answer_words_and_evidence_facts() -> None:
    conversation = Conversation(
        "c",
        ReplayFormat.LOCOMO,
        [],
        {
            "speakers": ["Caroline", "Melanie"],
            "turns": {"D1:3": "Caroline went to Boston on 8 May 2023 because of Pride."},
            "qa": [
                {"answer": "7 May 2023", "evidence": ["D1:3"], "category": 2},
                {"answer": "Caroline and the pottery class", "evidence": [], "category": 1},
                {"adversarial_answer": "never", "evidence": ["D1:3"], "category": 5},
                {"answer": 2022, "evidence": ["D9:9"], "category": 2},
            ],
        },
    )
    assert anchors_of(conversation) == [
        Anchor("answer", "2022"),
        Anchor("answer", "2023"),
        Anchor("answer", "7"),
        Anchor("answer", "class"),
        Anchor("answer", "may"),
        Anchor("answer", "pottery"),
        Anchor("evidence", "8 may 2023"),
        Anchor("evidence", "boston"),
        Anchor("evidence", "pride"),
    ]


def test_tau_anchors_are_gold_argument_values() -> None:
    actions = [
        {"name": "book", "kwargs": {"user_id": "mia_li_3668", "flights": [
            {"flight_number": "HAT136", "date": "2024-05-20"}], "insurance": "no",
            "total_baggages": 3, "amount": 250, "express": True, "note": None}},
        "not an action",
    ]  # fmt: skip
    conversation = Conversation("t", ReplayFormat.TAU_BENCH, [], {"actions": actions})
    assert [a.value for a in anchors_of(conversation)] == [
        "2024-05-20",
        "250",
        "hat136",
        "mia_li_3668",
    ]


def test_swe_anchors_are_paths_errors_and_the_fix() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Fix src/marshmallow/fields.py please"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "1",
                    "type": "function",
                    "function": {"name": "open", "arguments": '{"command": "open a/b.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "1", "content": "ValueError: bad\n12: raise KeyError:"},
        {"role": "assistant", "content": "Looks like a TypeError: in x/y.py"},
    ]
    submission = (
        "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n"
        "-    return round(value)\n+    return int(round_half(value))\n"
    )
    conversation = Conversation("s", ReplayFormat.SWE_AGENT, messages, {"submission": submission})
    found = {(a.kind, a.value) for a in anchors_of(conversation)}
    assert found == {
        ("path", "src/marshmallow/fields.py"),
        ("path", "a/b.py"),
        ("path", "x/y.py"),
        ("error", "valueerror"),
        ("fix", "src/m.py"),
        ("fix", "round_half"),
    }


def test_other_sources_have_no_anchors() -> None:
    assert anchors_of(Conversation("o", ReplayFormat.OPENAI, [{"role": "user"}])) == []


def test_a_haystack_holds_words_and_phrases_at_word_boundaries() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Booked HAT136 on 2024-05-20 for Mia's trip."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "pay",
                                                         "arguments": '{"id": "credit_card_7"}'}}]},
    ]  # fmt: skip
    hay = Haystack.of(messages, system="see src/app.py")
    assert hay.holds(Anchor("a", "hat136"))
    assert hay.holds(Anchor("a", "mia's"))
    assert hay.holds(Anchor("a", "2024-05-20"))
    assert hay.holds(Anchor("a", "credit_card_7"))
    assert hay.holds(Anchor("a", "src/app.py"))
    assert hay.holds(Anchor("a", "pay"))
    assert not hay.holds(Anchor("a", "hat13"))
    assert not hay.holds(Anchor("a", "credit_card"))
    assert not hay.holds(Anchor("a", "app.p"))
    assert words("Mia’s 7 May") == ["mia’s", "7", "may"]


def test_recall_by_kind_and_pooled() -> None:
    hay = Haystack("alpha beta 2024-01-01")
    anchors = [Anchor("x", "alpha"), Anchor("x", "gamma"), Anchor("y", "2024-01-01")]
    assert recall(anchors, hay) == {
        "x": Recall(1, 2),
        "y": Recall(1, 1),
        "all": Recall(2, 3),
    }
    assert Recall(0, 0).share is None
    assert Recall(1, 4).share == 0.25


def stored(seq: int, message: dict[str, Any], tokens: int) -> StoredMessage:
    return StoredMessage(
        seq, message["role"], 0, message, tokens, None, datetime(2026, 1, 1, tzinfo=UTC)
    )


def test_truncation_is_the_newest_that_fit_with_tool_groups_whole() -> None:
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}  # fmt: skip
    history = [
        stored(1, {"role": "user", "content": "a"}, 10),
        stored(2, call, 10),
        stored(3, {"role": "tool", "tool_call_id": "c", "name": "f", "content": "r"}, 10),
        stored(4, {"role": "assistant", "content": "b"}, 10),
    ]
    cut = truncation(history, 25)
    assert cut.messages == [history[0].message, history[3].message], "the user message always"
    assert cut.tokens == 20
    whole = truncation(history, 40)
    assert whole.tokens == 40
    assert "name" not in whole.messages[2], "sent as the context sends it"


def test_protected_items_must_stay_until_closed() -> None:
    history = {
        Section.FILES: [(1, "- a/b.py\n- c.py"), (2, "- a/b.py"), (3, "- a/b.py\n- c.py")],
        Section.ERRORS: [(1, "- E1"), (2, "- e1\n- E2"), (3, "- E2")],
        Section.OPEN_ISSUES: [
            (1, "- Is X ready?\n- Who signs?"),
            (2, "- [silently dropped, restored] Is X ready?\n- [resolved] Who signs?"),
            (3, ""),
        ],
        Section.TASK_AND_GOALS: [
            (1, "- Never touch prod\n- Ship it\n- Only use Debian"),
            (2, "- [kept constraint] Never touch prod\n- [lifted] Only use Debian"),
            (3, ""),
        ],
    }
    assert protected_losses(history) == [
        Loss(Section.TASK_AND_GOALS, "Never touch prod", 1, 3),
        Loss(Section.FILES, "c.py", 1, 2),
        Loss(Section.ERRORS, "E1", 1, 3),
        Loss(Section.OPEN_ISSUES, "Is X ready?", 1, 3),
    ]


@pytest.mark.parametrize("section", [Section.CURRENT_STATE, Section.KEY_FACTS])
def test_unguarded_sections_lose_nothing_protected(section: Section) -> None:
    assert protected_losses({section: [(1, "- anything"), (2, "")]}) == []
