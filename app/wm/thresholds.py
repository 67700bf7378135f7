"""Guard thresholds, section sizes and the size reminders given to the model before an update.

Owns the numbers of DESIGN 3.5 (as one frozen configuration), how a section's size is measured,
its size state, and the ``<section_size_warnings>`` block. Never applies an op.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Final

from app.wm.items import split_items
from app.wm.sections import SECTIONS, Section
from app.wm.tokens import TokenCounter, count_tokens


@dataclass(frozen=True, slots=True)
class GuardConfig:
    """Every threshold of the guards; the defaults are those of DESIGN 3.5."""

    key_facts_max_items: int = 25
    key_facts_max_tokens: int = 1500
    key_facts_emergency_items: int = 50
    key_facts_emergency_tokens: int = 3000
    oversized_append_cap: int = 5
    consolidation_min_ratio: float = 0.15
    anchor_min_coverage: float = 0.70
    warning_items: int = 25
    warning_tokens: int = 1500

    @property
    def min_ratio(self) -> Fraction:
        # Compared as exact fractions: 3/20 must pass a 0.15 threshold, and 0.15 * 20 in binary
        # floating point is 3.0000000000000004.
        return Fraction(repr(self.consolidation_min_ratio))

    @property
    def min_coverage(self) -> Fraction:
        return Fraction(repr(self.anchor_min_coverage))


DEFAULT_CONFIG: Final = GuardConfig()

# Errors & Corrections is append-only: asking the model to shrink it would ask for a loss.
WARNED_SECTIONS: Final[tuple[Section, ...]] = tuple(s for s in SECTIONS if s is not Section.ERRORS)


class SizeState(StrEnum):
    NORMAL = "normal"
    OVERSIZED = "oversized"
    EMERGENCY = "emergency"


@dataclass(frozen=True, slots=True)
class SectionSize:
    items: int
    tokens: int


def measure(body: str, counter: TokenCounter) -> SectionSize:
    return SectionSize(items=len(split_items(body)), tokens=counter(body) if body else 0)


def key_facts_state(size: SectionSize, config: GuardConfig) -> SizeState:
    if (
        size.items > config.key_facts_emergency_items
        or size.tokens > config.key_facts_emergency_tokens
    ):
        return SizeState.EMERGENCY
    if size.items > config.key_facts_max_items or size.tokens > config.key_facts_max_tokens:
        return SizeState.OVERSIZED
    return SizeState.NORMAL


def oversized_sections(
    bodies: Mapping[Section, str],
    counter: TokenCounter = count_tokens,
    config: GuardConfig = DEFAULT_CONFIG,
) -> list[tuple[Section, SectionSize]]:
    """Sections (Errors & Corrections excepted) above the warning thresholds, in order."""
    found: list[tuple[Section, SectionSize]] = []
    for section in WARNED_SECTIONS:
        size = measure(bodies.get(section, "").strip(), counter)
        if size.items > config.warning_items or size.tokens > config.warning_tokens:
            found.append((section, size))
    return found


def size_warnings(
    bodies: Mapping[Section, str],
    counter: TokenCounter = count_tokens,
    config: GuardConfig = DEFAULT_CONFIG,
) -> str:
    """The ``<section_size_warnings>`` block for the update prompt, or "" when none is needed."""
    oversized = oversized_sections(bodies, counter, config)
    if not oversized:
        return ""
    lines = ["<section_size_warnings>"]
    for section, size in oversized:
        lines.append(
            f'- "{section.value}" has {size.items} item{"" if size.items == 1 else "s"} and '
            f"{size.tokens} tokens. "
            f"Consolidate it with UPDATE to at most {config.warning_items} items and "
            f"{config.warning_tokens} tokens, merging related bullets and preserving names, "
            "dates and exact values."
        )
    lines.append("</section_size_warnings>")
    return "\n".join(lines)
