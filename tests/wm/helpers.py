"""Small builders shared by the working-memory tests: pinned token counter, ops, one-section runs."""

from __future__ import annotations

from typing import Any

from app.wm.merge import Decision, MergeResult, merge
from app.wm.paths import find_paths
from app.wm.sections import SECTIONS, Section
from app.wm.thresholds import DEFAULT_CONFIG, GuardConfig

Op = dict[str, Any]


def words(text: str) -> int:
    """A pinned token counter: one token per whitespace-separated word."""
    return len(text.split())


def keep() -> Op:
    return {"op": "KEEP"}


def update(content: str) -> Op:
    return {"op": "UPDATE", "content": content}


def append(*items: object) -> Op:
    return {"op": "APPEND", "items": list(items)}


def ops_for(section: Section, op: object) -> dict[str, Any]:
    sections: dict[str, object] = {s.value: keep() for s in SECTIONS}
    sections[section.value] = op
    return {"sections": sections}


def path_set(text: str) -> frozenset[str]:
    """The paths of a text as a set: what guard D compares, for "no path was lost" checks."""
    return frozenset(find_paths(text))


def bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def merge_one(
    section: Section,
    prior_body: str,
    op: object,
    *,
    config: GuardConfig = DEFAULT_CONFIG,
) -> tuple[Decision, str, MergeResult]:
    """Merge one op into one section (the others KEEP) with the pinned counter."""
    result = merge({section: prior_body}, ops_for(section, op), config=config, counter=words)
    return result.decision(section), result.sections[section], result
