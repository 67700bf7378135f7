"""Guards A-F: for a section with a non-empty prior body, the op to apply instead of the one asked.

Owns the rules of DESIGN 3.5 and 3.7 that protect what each section exists to keep (title
identity, key-fact anchors, constraints, paths, errors, open issues). Pure: no I/O, clock or
randomness, and never renders the document (that is ``merge``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from app.wm.anchors import anchors, title_words
from app.wm.items import (
    Marker,
    fresh_items,
    is_heading,
    is_kept,
    markers_of,
    split_items,
    strip_bullet,
    strip_markers,
    with_marker,
)
from app.wm.ops import KEEP, OpKind, SectionOp, append, update
from app.wm.paths import find_paths
from app.wm.reasons import DETAIL_SALVAGE, Guard, Reason
from app.wm.sections import Section
from app.wm.thresholds import GuardConfig, SizeState, key_facts_state, measure
from app.wm.tokens import TokenCounter

SENTINEL: Final = (
    "[⚠ CONSOLIDATION REQUIRED: Key Facts exceeds size limit. You MUST use UPDATE to merge and "
    "compress existing bullets before adding new facts.]"
)

_CONSTRAINT_WORDS: Final = re.compile(
    r"(?<![\w'’])(?:must|never|always|don['’]t|do\s+not|only|require[sd]?|required|forbids?|"
    r"forbidden|no\s+longer|prefer(?:s|red)?|instead\s+of|avoids?)(?![\w'’])",
    re.IGNORECASE,
)
_CONSTRAINT_CJK: Final = ("不要", "必须", "禁止", "务必", "只能", "只用", "不许")
_LIST_LIMIT: Final = 50


@dataclass(frozen=True, slots=True)
class Verdict:
    """A guard's answer: the op to apply, the reason, and the numbers behind it."""

    op: SectionOp
    reason: Reason = Reason.ACCEPTED
    details: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GuardContext:
    config: GuardConfig
    counter: TokenCounter


GuardFunction = Callable[[str, SectionOp, GuardContext], Verdict]


def accept(op: SectionOp) -> Verdict:
    return Verdict(op)


def _listed(values: list[str]) -> list[str]:
    return values[:_LIST_LIMIT]


# A. Session Title ------------------------------------------------------------------------------


def title_guard(prior: str, op: SectionOp, ctx: GuardContext) -> Verdict:
    if op.kind is OpKind.KEEP:
        return accept(op)
    if op.kind is OpKind.APPEND:
        return Verdict(KEEP, Reason.TITLE_SINGLE_LINE)
    old_words = title_words(prior)
    if not old_words:
        return accept(op)
    shared = sorted(old_words & title_words(op.content))
    if shared:
        return Verdict(op, Reason.ACCEPTED, {"shared_words": shared})
    return Verdict(KEEP, Reason.TITLE_NO_OVERLAP, {"old_words": sorted(old_words)})


# B. Key Facts & Decisions ------------------------------------------------------------------------


def without_sentinel(body: str) -> str:
    return "\n".join(line for line in body.splitlines() if SENTINEL not in line).strip()


def key_facts_append(prior: str, fresh: list[str], ctx: GuardContext) -> Verdict:
    """The APPEND rules of guard B for items already known to be fresh (at least one)."""
    size = measure(prior, ctx.counter)
    state = key_facts_state(size, ctx.config)
    numbers: dict[str, object] = {
        "size_state": state.value,
        "items": size.items,
        "tokens": size.tokens,
        "fresh": len(fresh),
    }
    if state is SizeState.NORMAL:
        return Verdict(append(fresh), Reason.ACCEPTED, numbers)
    if state is SizeState.OVERSIZED:
        accepted = fresh[: ctx.config.oversized_append_cap]
        numbers["accepted"] = len(accepted)
        return Verdict(append(accepted), Reason.OVERSIZED_THROTTLED, numbers)
    if SENTINEL in prior:
        return Verdict(KEEP, Reason.EMERGENCY_HARD_STOP, numbers)
    return Verdict(append([SENTINEL]), Reason.EMERGENCY_SENTINEL, numbers)


_UNCROSSED: Final = re.compile(r"\n(?=[^\s\w])")
"""A line break before a line that starts with neither a space nor a word character (a bullet,
a heading): no anchor runs across it."""


def body_anchors(body: str) -> frozenset[str]:
    """``anchors(body)``, found part by part: the body is cut at every ``_UNCROSSED`` break, so
    the parts a body kept from the prior version are looked up rather than scanned again.

    The same set as one scan: the anchors that span whitespace (a long date, a quantity, a clock
    time) go on after it with a letter or a digit, so none crosses such a break, and to every
    anchor's edges a line break reads like the start or end of a text.
    """
    return frozenset().union(*(anchors(part) for part in _UNCROSSED.split(body)))


def key_facts_guard(prior: str, op: SectionOp, ctx: GuardContext) -> Verdict:
    if op.kind is OpKind.KEEP:
        return accept(op)
    if op.kind is OpKind.APPEND:
        return key_facts_append(prior, list(op.items), ctx)
    content = without_sentinel(op.content)
    old_body = without_sentinel(prior)
    old_items = split_items(old_body)
    if not old_items:
        return accept(update(content))
    new_items = split_items(content)
    numbers: dict[str, object] = {
        "old_items": len(old_items),
        "new_items": len(new_items),
        "ratio": round(len(new_items) / len(old_items), 4),
    }
    rejection: Reason | None = None
    min_ratio = ctx.config.min_ratio
    if len(new_items) * min_ratio.denominator < min_ratio.numerator * len(old_items):
        rejection = Reason.KEY_FACTS_RATIO
    else:
        old_anchors = body_anchors(old_body)
        if old_anchors:
            covered = old_anchors & body_anchors(content)
            numbers["anchors"] = len(old_anchors)
            numbers["anchors_covered"] = len(covered)
            numbers["coverage"] = round(len(covered) / len(old_anchors), 4)
            min_coverage = ctx.config.min_coverage
            if len(covered) * min_coverage.denominator < min_coverage.numerator * len(old_anchors):
                rejection = Reason.KEY_FACTS_ANCHOR_COVERAGE
                numbers["missing_anchors"] = _listed(sorted(old_anchors - covered))
    if rejection is None:
        return Verdict(update(content), Reason.ACCEPTED, numbers)
    fresh = fresh_items(prior, new_items)
    if not fresh:
        numbers[DETAIL_SALVAGE] = {"applied": OpKind.KEEP.value, "reason": Reason.NOTHING_NEW.value}
        return Verdict(KEEP, rejection, numbers)
    salvage = key_facts_append(prior, fresh, ctx)
    numbers[DETAIL_SALVAGE] = {
        "applied": salvage.op.kind.value,
        "reason": salvage.reason.value,
        "items": len(salvage.op.items),
    }
    return Verdict(salvage.op, rejection, numbers)


# C. Task & Goals ---------------------------------------------------------------------------------


_NOT_CONSTRAINTS: Final = frozenset(
    {
        Marker.LIFTED,
        Marker.DONE,
        Marker.UNSOURCED,
        Marker.CONTRADICTS,
        Marker.CONFLICTING,
        Marker.TOOL_SOURCED,
    }
)


@functools.lru_cache(maxsize=16384)
def states_constraint(text: str) -> bool:
    """Whether a text holds one of guard C's keywords (whole words, or a CJK one)."""
    return _CONSTRAINT_WORDS.search(text) is not None or any(w in text for w in _CONSTRAINT_CJK)


def is_constraint(item: str) -> bool:
    """A user constraint (DESIGN 3.5 C, 3.7): a keyword, and not lifted, done, unsourced,
    contradicting its source or a kept constraint, or tool-sourced (an instruction no user
    message gave is not the user's to keep)."""
    if markers_of(item) & _NOT_CONSTRAINTS:
        return False
    return states_constraint(strip_markers(item))


def task_guard(prior: str, op: SectionOp, ctx: GuardContext) -> Verdict:
    if op.kind is not OpKind.UPDATE:
        return accept(op)
    restored = _restore(
        op.content,
        [item for item in split_items(prior) if is_constraint(item)],
        Marker.KEPT_CONSTRAINT,
    )
    if not restored:
        return accept(op)
    content = _with_lines(op.content, restored)
    return Verdict(update(content), Reason.CONSTRAINT_RESTORED, {"restored": _listed(restored)})


# D. Files & Context ------------------------------------------------------------------------------


def files_guard(prior: str, op: SectionOp, ctx: GuardContext) -> Verdict:
    if op.kind is not OpKind.UPDATE:
        return accept(op)
    old_paths = find_paths(prior)
    new_paths = find_paths(op.content)
    new_set = set(new_paths)
    lost = [path for path in old_paths if path not in new_set]
    if not lost:
        return accept(op)
    old_set = set(old_paths)
    added = [path for path in new_paths if path not in old_set]
    details: dict[str, object] = {"lost_paths": _listed(lost), "added_paths": _listed(added)}
    items = fresh_items(prior, [_mention(op.content, path) for path in added])
    if not items:
        return Verdict(KEEP, Reason.FILES_PATH_REGRESSION, details)
    return Verdict(append(items), Reason.FILES_PATH_REGRESSION, details)


def _mention(content: str, path: str) -> str:
    for line in content.splitlines():
        if line.strip() and not is_heading(line) and path in find_paths(line):
            return strip_bullet(line)
    return f"{path} (newly referenced)"


# E. Errors & Corrections -------------------------------------------------------------------------


def errors_guard(prior: str, op: SectionOp, ctx: GuardContext) -> Verdict:
    if op.kind is not OpKind.UPDATE:
        return accept(op)
    fresh = fresh_items(prior, split_items(op.content))
    details: dict[str, object] = {"appended": len(fresh)}
    if not fresh:
        return Verdict(KEEP, Reason.ERRORS_APPEND_ONLY, details)
    return Verdict(append(fresh), Reason.ERRORS_APPEND_ONLY, details)


# F. Open Issues ----------------------------------------------------------------------------------

_CLOSED: Final = frozenset({Marker.RESOLVED, Marker.DONE, Marker.RESTORED})


def open_issues_guard(prior: str, op: SectionOp, ctx: GuardContext) -> Verdict:
    if op.kind is not OpKind.UPDATE:
        return accept(op)
    watched = [item for item in split_items(prior) if not markers_of(item) & _CLOSED]
    restored = _restore(op.content, watched, Marker.RESTORED)
    if not restored:
        return accept(op)
    content = _with_lines(op.content, restored)
    return Verdict(update(content), Reason.OPEN_ISSUES_RESTORED, {"restored": _listed(restored)})


def _restore(content: str, watched: list[str], marker: Marker) -> list[str]:
    """Watched items whose snippet the new content lacks, under ``marker``, each restored once.

    Each restored line joins the text the next snippet is looked up in, so two items with the
    same snippet never restore twice.
    """
    restored: list[str] = []
    lowered = content.lower()
    for item in watched:
        if not is_kept(item, lowered):
            line = with_marker(marker, item)
            restored.append(line)
            lowered = f"{lowered}\n{line.lower()}"
    return restored


def _with_lines(content: str, items: list[str]) -> str:
    lines = "\n".join(f"- {item}" for item in items)
    stripped = content.strip()
    return f"{stripped}\n{lines}" if stripped else lines


GUARDS: Final[dict[Section, tuple[Guard, GuardFunction]]] = {
    Section.SESSION_TITLE: (Guard.TITLE_STABILITY, title_guard),
    Section.KEY_FACTS: (Guard.CONSOLIDATION_ANTI_BLOAT, key_facts_guard),
    Section.TASK_AND_GOALS: (Guard.CONSTRAINT_RETENTION, task_guard),
    Section.FILES: (Guard.NO_PATH_REGRESSION, files_guard),
    Section.ERRORS: (Guard.APPEND_ONLY, errors_guard),
    Section.OPEN_ISSUES: (Guard.NO_SILENT_DROP, open_issues_guard),
}
