"""Guard B, Key Facts & Decisions: anti-bloat and consolidation (DESIGN 3.5 B).

The token counter is pinned to one token per word, so "- " plus 1499 words is 1500 tokens.
"""

from __future__ import annotations

import pytest

from app.wm.guards import SENTINEL
from app.wm.ops import OpKind
from app.wm.reasons import Guard, Reason
from app.wm.sections import Section
from app.wm.thresholds import GuardConfig
from tests.wm.helpers import Op, append, bullets, keep, merge_one, update

FACTS = Section.KEY_FACTS
NAMES = [
    "Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel", "India", "Juliet",
]  # fmt: skip


def items(count: int, prefix: str = "fact") -> list[str]:
    return [f"{prefix}{index}" for index in range(count)]


def long_item(tokens: int) -> str:
    """One item whose line ("- " plus words) costs exactly ``tokens`` pinned tokens."""
    return " ".join(["w"] * (tokens - 1))


FRESH = items(7, "new")


@pytest.mark.parametrize(
    ("prior_items", "state", "applied", "reason", "accepted"),
    [
        (items(25), "normal", OpKind.APPEND, Reason.ACCEPTED, 7),
        (items(26), "oversized", OpKind.APPEND, Reason.OVERSIZED_THROTTLED, 5),
        ([long_item(1500)], "normal", OpKind.APPEND, Reason.ACCEPTED, 7),
        ([long_item(1501)], "oversized", OpKind.APPEND, Reason.OVERSIZED_THROTTLED, 5),
        (items(50), "oversized", OpKind.APPEND, Reason.OVERSIZED_THROTTLED, 5),
        (items(51), "emergency", OpKind.APPEND, Reason.EMERGENCY_SENTINEL, 1),
        ([long_item(3000)], "oversized", OpKind.APPEND, Reason.OVERSIZED_THROTTLED, 5),
        ([long_item(3001)], "emergency", OpKind.APPEND, Reason.EMERGENCY_SENTINEL, 1),
    ],
)
def test_append_by_size_state(
    prior_items: list[str], state: str, applied: OpKind, reason: Reason, accepted: int
) -> None:
    prior = bullets(prior_items)
    decision, body, _ = merge_one(FACTS, prior, append(*FRESH))
    assert (decision.applied, decision.reason) == (applied, reason)
    assert decision.guard is Guard.CONSOLIDATION_ANTI_BLOAT
    assert decision.details["size_state"] == state
    added = body[len(prior) + 1 :].splitlines()
    if reason is Reason.EMERGENCY_SENTINEL:
        assert added == [f"- {SENTINEL}"]
    else:
        assert added == [f"- {item}" for item in FRESH[:accepted]]


@pytest.mark.parametrize(("fresh", "accepted"), [(4, 4), (5, 5), (6, 5)])
def test_the_oversized_cap_is_five_fresh_items(fresh: int, accepted: int) -> None:
    prior = bullets(items(26))
    decision, body, _ = merge_one(FACTS, prior, append("fact0", "fact1", *items(fresh, "n")))
    assert decision.reason is Reason.OVERSIZED_THROTTLED
    assert decision.details["fresh"] == fresh
    assert decision.details["accepted"] == accepted
    assert body == prior + "\n" + bullets(items(fresh, "n")[:accepted])


def test_the_cap_is_configuration() -> None:
    config = GuardConfig(oversized_append_cap=2)
    decision, body, _ = merge_one(FACTS, bullets(items(26)), append(*FRESH), config=config)
    assert body.endswith("- new0\n- new1")
    assert decision.details["accepted"] == 2


def test_the_sentinel_is_appended_once_then_the_section_stops_growing() -> None:
    prior = bullets(items(51))
    first, after_first, _ = merge_one(FACTS, prior, append("one more"))
    assert first.reason is Reason.EMERGENCY_SENTINEL
    assert after_first == f"{prior}\n- {SENTINEL}"
    second, after_second, _ = merge_one(FACTS, after_first, append("and another"))
    assert (second.applied, second.reason) == (OpKind.KEEP, Reason.EMERGENCY_HARD_STOP)
    assert after_second == after_first
    assert after_second.count(SENTINEL) == 1


def test_only_fresh_items_can_trigger_the_sentinel() -> None:
    prior = bullets(items(51))
    decision, body, _ = merge_one(FACTS, prior, append("FACT0.", "fact1"))
    assert (decision.applied, decision.reason, decision.guard) == (
        OpKind.KEEP,
        Reason.NOTHING_NEW,
        None,
    )
    assert body == prior


def test_a_model_cannot_write_the_sentinel_itself() -> None:
    decision, body, _ = merge_one(FACTS, "- a", append(SENTINEL, "b"))
    assert body == "- a\n- b"
    assert decision.details["sentinel_removed"] is True
    decision, body, _ = merge_one(FACTS, "", update(f"- x\n- {SENTINEL}"))
    assert body == "- x"
    assert decision.details["sentinel_removed"] is True


def named_facts(count: int) -> str:
    return bullets([f"{name} owns part {index}" for index, name in enumerate(NAMES[:count])])


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (20, 3, Reason.ACCEPTED),  # exactly 0.15
        (20, 2, Reason.KEY_FACTS_RATIO),  # 0.10
        (40, 6, Reason.ACCEPTED),  # exactly 0.15
        (40, 5, Reason.KEY_FACTS_RATIO),  # 0.125, just below
        (40, 7, Reason.ACCEPTED),  # 0.175, just above
    ],
)
def test_consolidation_ratio(old: int, new: int, reason: Reason) -> None:
    prior = bullets(items(old))
    content = bullets(items(new, "merged"))
    decision, body, _ = merge_one(FACTS, prior, update(content))
    assert decision.reason is reason
    assert decision.details["old_items"] == old
    assert decision.details["new_items"] == new
    assert decision.details["ratio"] == round(new / old, 4)
    if reason is Reason.ACCEPTED:
        assert (decision.applied, body) == (OpKind.UPDATE, content)


@pytest.mark.parametrize(
    ("covered", "reason"),
    [(7, Reason.ACCEPTED), (6, Reason.KEY_FACTS_ANCHOR_COVERAGE), (8, Reason.ACCEPTED)],
)
def test_consolidation_anchor_coverage(covered: int, reason: Reason) -> None:
    prior = named_facts(10)
    content = "- " + ", ".join(NAMES[:covered]) + " own their parts\n- merged"
    decision, _, _ = merge_one(FACTS, prior, update(content))
    assert decision.reason is reason
    assert decision.details["anchors"] == 10
    assert decision.details["anchors_covered"] == covered
    assert decision.details["coverage"] == covered / 10
    if reason is Reason.KEY_FACTS_ANCHOR_COVERAGE:
        assert decision.details["missing_anchors"] == sorted(n.lower() for n in NAMES[covered:])


def test_a_prior_without_anchors_passes_layer_two() -> None:
    decision, body, _ = merge_one(FACTS, bullets(items(10)), update("- merged\n- facts"))
    assert (decision.applied, decision.reason, body) == (
        OpKind.UPDATE,
        Reason.ACCEPTED,
        "- merged\n- facts",
    )
    assert "coverage" not in decision.details


def test_a_prior_without_items_accepts_any_update() -> None:
    decision, body, _ = merge_one(FACTS, "### Only a heading", update(""))
    assert (decision.applied, decision.reason, body) == (OpKind.UPDATE, Reason.ACCEPTED, "")


def test_anchors_ignore_the_sentinel_line_so_the_emergency_can_end() -> None:
    prior = named_facts(10) + "\n" + bullets(items(45)) + f"\n- {SENTINEL}"
    content = "- " + ", ".join(NAMES) + " own their parts\n" + bullets(items(9, "merged"))
    decision, body, _ = merge_one(FACTS, prior, update(content))
    assert (decision.applied, decision.reason) == (OpKind.UPDATE, Reason.ACCEPTED)
    assert decision.details["anchors"] == 10
    assert SENTINEL not in body


def test_an_accepted_consolidation_drops_a_copied_sentinel_line() -> None:
    prior = bullets(items(51)) + f"\n- {SENTINEL}"
    content = bullets(items(10, "merged")) + f"\n- {SENTINEL}"
    decision, body, _ = merge_one(FACTS, prior, update(content))
    assert (decision.applied, decision.reason) == (OpKind.UPDATE, Reason.ACCEPTED)
    assert body == bullets(items(10, "merged"))
    assert decision.details["new_items"] == 10


@pytest.mark.parametrize(
    ("prior", "content", "applied", "added", "salvage"),
    [
        # Normal state: the fresh items of the rejected UPDATE are appended.
        (
            bullets(items(20)),
            "- fact0\n- brand new",
            OpKind.APPEND,
            ["brand new"],
            {"applied": "APPEND", "reason": "accepted", "items": 1},
        ),
        # Oversized: the salvage goes through the 5-item cap.
        (
            bullets(items(40)),
            bullets(items(5, "n")),
            OpKind.APPEND,
            items(5, "n"),
            {"applied": "APPEND", "reason": "oversized_throttled", "items": 5},
        ),
        # Emergency: the salvage is the sentinel.
        (
            bullets(items(60)),
            bullets(items(8, "n")),
            OpKind.APPEND,
            [SENTINEL],
            {"applied": "APPEND", "reason": "emergency_sentinel", "items": 1},
        ),
        # Emergency with the sentinel already there: nothing.
        (
            bullets(items(60)) + f"\n- {SENTINEL}",
            bullets(items(8, "n")),
            OpKind.KEEP,
            [],
            {"applied": "KEEP", "reason": "emergency_hard_stop", "items": 0},
        ),
        # Nothing fresh to salvage.
        (
            bullets(items(20)),
            "- fact1\n- fact2",
            OpKind.KEEP,
            [],
            {"applied": "KEEP", "reason": "nothing_new"},
        ),
    ],
)
def test_a_rejected_update_is_salvaged_as_an_append(
    prior: str, content: str, applied: OpKind, added: list[str], salvage: dict[str, object]
) -> None:
    decision, body, _ = merge_one(FACTS, prior, update(content))
    assert decision.reason is Reason.KEY_FACTS_RATIO
    assert decision.applied is applied
    assert decision.details["salvage"] == salvage
    assert body == prior + "".join(f"\n- {item}" for item in added)


def test_a_salvage_in_emergency_yields_the_sentinel_once_then_keeps() -> None:
    prior = bullets(items(60))
    _, once, _ = merge_one(FACTS, prior, update("- lone fact"))
    _, twice, _ = merge_one(FACTS, once, update("- lone fact"))
    assert once == twice == f"{prior}\n- {SENTINEL}"


@pytest.mark.parametrize("op", [keep(), append()])
def test_keep_and_empty_append_leave_key_facts_alone(op: Op) -> None:
    decision, body, _ = merge_one(FACTS, bullets(items(60)), op)
    assert decision.applied is OpKind.KEEP
    assert body == bullets(items(60))
