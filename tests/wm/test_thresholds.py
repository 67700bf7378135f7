"""Size states, thresholds as configuration, and the size reminders block (DESIGN 3.5)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from app.wm.sections import SECTIONS, Section, empty_sections
from app.wm.thresholds import (
    DEFAULT_CONFIG,
    GuardConfig,
    SectionSize,
    SizeState,
    key_facts_state,
    measure,
    oversized_sections,
    size_warnings,
)


def words(text: str) -> int:
    return len(text.split())


def body(items: int, words_per_item: int = 1) -> str:
    return "\n".join("- " + " ".join(["w"] * words_per_item) for _ in range(items))


def test_defaults_are_those_of_the_design() -> None:
    design = GuardConfig(
        key_facts_max_items=25,
        key_facts_max_tokens=1500,
        key_facts_emergency_items=50,
        key_facts_emergency_tokens=3000,
        oversized_append_cap=5,
        consolidation_min_ratio=0.15,
        anchor_min_coverage=0.70,
        warning_items=25,
        warning_tokens=1500,
    )
    assert design == DEFAULT_CONFIG
    assert DEFAULT_CONFIG.min_ratio == Fraction(3, 20)
    assert DEFAULT_CONFIG.min_coverage == Fraction(7, 10)


@pytest.mark.parametrize(
    ("items", "tokens", "state"),
    [
        (25, 1500, SizeState.NORMAL),
        (26, 10, SizeState.OVERSIZED),
        (1, 1501, SizeState.OVERSIZED),
        (50, 3000, SizeState.OVERSIZED),
        (51, 10, SizeState.EMERGENCY),
        (1, 3001, SizeState.EMERGENCY),
        (0, 0, SizeState.NORMAL),
    ],
)
def test_key_facts_size_state(items: int, tokens: int, state: SizeState) -> None:
    assert key_facts_state(SectionSize(items, tokens), DEFAULT_CONFIG) is state


def test_measure_counts_items_and_tokens() -> None:
    assert measure("- a b\n### h\n- c", words) == SectionSize(items=2, tokens=7)
    assert measure("", lambda text: 99) == SectionSize(0, 0)


@pytest.mark.parametrize(
    ("items", "words_per_item", "warned"),
    [
        (25, 1, False),
        (26, 1, True),
        (1, 1499, False),  # "- " plus 1499 words: 1500 tokens
        (1, 1500, True),  # 1501 tokens
    ],
)
def test_size_warning_thresholds(items: int, words_per_item: int, warned: bool) -> None:
    bodies = empty_sections()
    bodies[Section.KEY_FACTS] = body(items, words_per_item)
    block = size_warnings(bodies, words)
    assert bool(block) is warned
    if warned:
        assert block.startswith("<section_size_warnings>\n")
        assert block.endswith("\n</section_size_warnings>")
        assert '"Key Facts & Decisions"' in block
        assert "UPDATE" in block
        assert "25 items and 1500 tokens" in block
        assert "preserving names, dates and exact values" in block


def test_errors_and_corrections_never_get_a_warning() -> None:
    bodies = {section: body(30) for section in SECTIONS}
    named = [section for section, _ in oversized_sections(bodies, words)]
    assert named == [section for section in SECTIONS if section is not Section.ERRORS]
    block = size_warnings(bodies, words)
    assert "Errors & Corrections" not in block
    assert "has 30 items and 60 tokens" in block


def test_size_warnings_count_with_tiktoken_by_default() -> None:
    bodies = {Section.OPEN_ISSUES: "- " + "word " * 1600}
    assert '"Open Issues" has 1 item and 1601 tokens' in size_warnings(bodies)


def test_warning_thresholds_are_configuration() -> None:
    bodies = {Section.OPEN_ISSUES: body(3)}
    assert size_warnings(bodies, words) == ""
    assert "at most 2 items" in size_warnings(bodies, words, GuardConfig(warning_items=2))
