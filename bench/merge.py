"""Benchmark of the pure merge: every section at its size threshold, then at twice that size.

Prints JSON: microseconds per merge (best of several timed rounds) for an UPDATE proposal that
makes every guard work, and for an APPEND proposal, at 1x and 2x size, with the 2x/1x ratios
(DESIGN 15: about a millisecond per section; doubling the size costs at most 2.5x).
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable

from app.wm.merge import merge
from app.wm.sections import SECTIONS, Section
from app.wm.thresholds import DEFAULT_CONFIG
from app.wm.tokens import count_tokens

ROUNDS = 30
NATO = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
)
WORDS = tuple(NATO.split())


def _item(section: Section, index: int, filler: int) -> str:
    words = " ".join(WORDS[(index + k) % len(WORDS)] for k in range(filler))
    if section is Section.TASK_AND_GOALS:
        return f"Never touch module {index} without review: {words}"
    if section is Section.KEY_FACTS:
        return f"Decided on 2024-05-{index % 28 + 1:02d} to use Service{index} because {words}"
    if section is Section.FILES:
        return f"src/package_{index}/module_{index}.py holds {words}"
    if section is Section.ERRORS:
        return f"ValueError{index}: parsing failed in step {index} {words}"
    if section is Section.OPEN_ISSUES:
        return f"Question {index}: should step {index} retry? {words}"
    return f"Step {index} of the plan is {words}"


def _filler() -> int:
    """The most filler words per item that keep 25 items within 1500 tokens in every section."""
    filler = 1
    while all(
        count_tokens(_body(section, DEFAULT_CONFIG.key_facts_max_items, filler + 1))
        <= DEFAULT_CONFIG.key_facts_max_tokens
        for section in SECTIONS
    ):
        filler += 1
    return filler


def _body(section: Section, items: int, filler: int) -> str:
    return "\n".join(f"- {_item(section, index, filler)}" for index in range(items))


def _prior(scale: int, filler: int) -> dict[Section, str]:
    items = DEFAULT_CONFIG.key_facts_max_items * scale
    prior = {section: _body(section, items, filler) for section in SECTIONS}
    prior[Section.SESSION_TITLE] = "Benchmark the working-memory merge"
    prior[Section.CURRENT_STATE] = "Running the benchmark. " * 5
    return prior


def _update_ops(prior: dict[Section, str]) -> dict[str, object]:
    def keep_half(section: Section) -> str:
        lines = prior[section].splitlines()
        return "\n".join(lines[: len(lines) // 2]) + "\n- a new line about src/new/module.py"

    return {
        "sections": {
            Section.SESSION_TITLE.value: {"op": "UPDATE", "content": "Merge benchmark, revised"},
            Section.CURRENT_STATE.value: {"op": "UPDATE", "content": "Measuring the merge."},
            **{
                section.value: {"op": "UPDATE", "content": keep_half(section)}
                for section in SECTIONS[2:]
            },
        }
    }


def _append_ops(prior: dict[Section, str]) -> dict[str, object]:
    fresh = [f"fresh item {index} about src/fresh/file_{index}.py" for index in range(5)]
    existing = prior[Section.KEY_FACTS].splitlines()[:5]
    return {
        "sections": {
            section.value: {"op": "APPEND", "items": fresh + existing} for section in SECTIONS
        }
    }


def _time_pair(small: Callable[[], object], large: Callable[[], object]) -> tuple[float, float]:
    """Best-of-ROUNDS microseconds for both, interleaved so that load from elsewhere on the
    machine hits the two sizes alike (this is a ratio, measured on a shared two-core box)."""
    small()
    large()
    # As timeit does: a cyclic collection landing in one sample measures the collector.
    gc.collect()
    gc.disable()
    try:
        return _rounds(small, large)
    finally:
        gc.enable()


def _rounds(small: Callable[[], object], large: Callable[[], object]) -> tuple[float, float]:
    best_small = best_large = float("inf")
    for _ in range(ROUNDS):
        started = time.perf_counter()
        small()
        best_small = min(best_small, time.perf_counter() - started)
        started = time.perf_counter()
        large()
        best_large = min(best_large, time.perf_counter() - started)
    return best_small * 1e6, best_large * 1e6


def _merge_only(prior: dict[Section, str], ops: dict[str, object]) -> Callable[[], object]:
    return lambda: merge(prior, ops)


def _merge_and_count(prior: dict[Section, str], ops: dict[str, object]) -> Callable[[], object]:
    # What storing a result costs: the merge plus the token count of every new section.
    return lambda: merge(prior, ops).token_counts


def main() -> None:
    filler = _filler()
    results: dict[str, object] = {}
    for label, build in (("update", _update_ops), ("append", _append_ops)):
        for variant, runner in (("merge", _merge_only), ("merge_and_counts", _merge_and_count)):
            small, large = _prior(1, filler), _prior(2, filler)
            one, two = _time_pair(runner(small, build(small)), runner(large, build(large)))
            results[f"{label}_{variant}"] = {
                "us_per_merge_1x": round(one, 1),
                "us_per_merge_2x": round(two, 1),
                "us_per_section_1x": round(one / len(SECTIONS), 1),
                "ratio_2x_over_1x": round(two / one, 3),
            }
    sizes = {}
    for scale in (1, 2):
        body = _prior(scale, filler)[Section.KEY_FACTS]
        sizes[f"{scale}x"] = {"items": len(body.splitlines()), "tokens": count_tokens(body)}
    results["section_size"] = sizes
    results["rounds"] = ROUNDS
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
