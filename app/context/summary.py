"""The ``[Session History Summary]`` message: the working memory within its token layer.

Owns the ordered reduction of DESIGN 7 (item cuts, then whole sections, Current State, Errors &
Corrections and Open Issues last), each cut marked in the text and reported, and the cut of a
legacy free-text summary. Pure; never decides the layer (``budget``) or what else is sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from app.archives.working_memory import WorkingMemory
from app.context.brief import brief_terms, fit_brief, shown_words
from app.wm.items import is_heading
from app.wm.sections import SECTIONS, Section, render
from app.wm.tokens import TokenCounter

FILES_KEEP_FIRST: Final = 20
KEY_FACTS_KEEP_NEWEST: Final = 25

SUMMARY_HEADER: Final = "[Session History Summary]"
SECTION_CUT_MARKER: Final = "[cut to fit the token budget]"


class CutKind(StrEnum):
    ITEMS = "items"
    """Items of a section beyond what the reduction keeps."""
    SECTION = "section"
    """A whole section."""
    TEXT = "text"
    """Trailing lines of a legacy free-text summary, which has no sections to cut."""


@dataclass(frozen=True, slots=True)
class Cut:
    kind: CutKind
    section: Section | None
    removed: int
    """Items (or lines, for ``TEXT``) that the cut took out."""


@dataclass(frozen=True, slots=True)
class ReductionStep:
    kind: CutKind
    section: Section
    keep: int = 0
    keep_newest: bool = False


KEY_FACTS_HALVINGS: Final = (12, 6, 3)
"""Before Key Facts goes whole, its newest 12, 6 and 3 items are kept in turn: a summary a little
over its layer loses its oldest facts, not all of them."""

REDUCTION_ORDER: Final[tuple[ReductionStep, ...]] = (
    ReductionStep(CutKind.ITEMS, Section.FILES, keep=FILES_KEEP_FIRST),
    ReductionStep(CutKind.ITEMS, Section.KEY_FACTS, keep=KEY_FACTS_KEEP_NEWEST, keep_newest=True),
    ReductionStep(CutKind.SECTION, Section.SESSION_TITLE),
    ReductionStep(CutKind.SECTION, Section.FILES),
    *(
        ReductionStep(CutKind.ITEMS, Section.KEY_FACTS, keep=keep, keep_newest=True)
        for keep in KEY_FACTS_HALVINGS
    ),
    ReductionStep(CutKind.SECTION, Section.KEY_FACTS),
    ReductionStep(CutKind.SECTION, Section.TASK_AND_GOALS),
    ReductionStep(CutKind.SECTION, Section.CURRENT_STATE),
    ReductionStep(CutKind.SECTION, Section.ERRORS),
    ReductionStep(CutKind.SECTION, Section.OPEN_ISSUES),
)
"""DESIGN 7: the order in which a summary that does not fit its layer is reduced."""


@dataclass(frozen=True, slots=True)
class Summary:
    """The ``[Session History Summary]`` message text, or ``None`` when nothing of it fits."""

    text: str | None
    tokens: int
    cuts: tuple[Cut, ...] = ()
    brief_terms: int = 0
    """Terms of the cut parts listed in the brief line that closes a reduced summary."""
    brief_tokens: int = 0
    """What the brief added to ``tokens``."""


def _item_lines(body: str) -> list[int]:
    return [i for i, line in enumerate(body.splitlines()) if line.strip() and not is_heading(line)]


def _apply(step: ReductionStep, bodies: dict[Section, str]) -> Cut | None:
    body = bodies[step.section]
    items = _item_lines(body)
    if step.kind is CutKind.SECTION:
        if not body or body == SECTION_CUT_MARKER:
            return None
        bodies[step.section] = SECTION_CUT_MARKER
        return Cut(CutKind.SECTION, step.section, len(items))
    lines = body.splitlines()
    # An earlier cut's marker is not an item to keep or count.
    items = [index for index in items if not lines[index].startswith("- [cut: ")]
    removed = len(items) - step.keep
    if removed <= 0:
        return None
    if step.keep_newest:
        # A section already cut says how many older items it lost: the new marker counts both.
        earlier = _EARLIER_CUT.match(lines[0]) if lines else None
        total = removed + (int(earlier.group(1)) if earlier else 0)
        marker = f"- [cut: {total} older items, to fit the token budget]"
        bodies[step.section] = "\n".join([marker, *lines[items[removed] :]])
    else:
        marker = f"- [cut: {removed} more items, to fit the token budget]"
        bodies[step.section] = "\n".join([*lines[: items[step.keep]], marker]).strip()
    return Cut(CutKind.ITEMS, step.section, removed)


_EARLIER_CUT: Final = re.compile(r"- \[cut: (\d+) older items")


def _summary_text(bodies: Mapping[Section, str]) -> str:
    return f"{SUMMARY_HEADER}\n\n{render(bodies)}"


def _section_block(section: Section, body: str) -> str:
    return f"## {section.value}\n{body}\n\n" if body else f"## {section.value}\n\n"


BRIEF_ORDER: Final[tuple[Section, ...]] = (
    Section.OPEN_ISSUES,
    Section.ERRORS,
    Section.CURRENT_STATE,
    Section.TASK_AND_GOALS,
    Section.KEY_FACTS,
    Section.FILES,
    Section.SESSION_TITLE,
)
"""The brief lists the cut items' terms in the reverse of the reduction's order: what the
reduction keeps longest matters most."""


def _cut_items(original: Mapping[Section, str], kept: Mapping[Section, str]) -> list[str]:
    """The items the reduction took out, most important section first, newest item first."""
    items: list[str] = []
    for section in BRIEF_ORDER:
        lines = original.get(section, "").strip().splitlines()
        left = set(kept.get(section, "").splitlines())
        items += [line for line in reversed(lines) if line.strip() and line not in left]
    return items


def _with_brief(
    summary: Summary,
    original: Mapping[Section, str],
    kept: Mapping[Section, str],
    layer: int,
    counter: TokenCounter,
    shown: frozenset[str],
    first: Sequence[str] = (),
) -> Summary:
    """``summary`` closed by the brief, in the room its layer has left: ``first`` (the terms of
    the newest summarised messages the context does not repeat raw), then the terms of its cuts,
    each once and none the summary or ``shown`` already holds."""
    if summary.text is None or not (summary.cuts or first):
        return summary
    held = shown | shown_words([summary.text])
    leading = [term for term in dict.fromkeys(first) if term.lower() not in held]
    terms = brief_terms(_cut_items(original, kept), held | {t.lower() for t in leading})
    terms = [*leading, *terms]
    room = layer - summary.tokens
    while terms and room > 0:
        line, _, listed = fit_brief(terms, room, counter)
        if not listed:
            break
        text = f"{summary.text.rstrip()}\n\n{line}\n"
        tokens = counter(text)
        if tokens <= layer:
            return Summary(text, tokens, summary.cuts, listed, tokens - summary.tokens)
        # Counts are not exactly additive: try again a little tighter.
        room -= tokens - layer
    return summary


FIRST_BRIEF_SHARE: Final = 2
"""The terms of the newest summarised messages not sent raw may take up to half the layer: the
sections are reduced to make that room before the brief is written."""


def summarise_sections(
    sections: Mapping[Section, str],
    layer: int,
    counter: TokenCounter,
    shown: frozenset[str] = frozenset(),
    first: Sequence[str] = (),
) -> Summary:
    """The summary of a seven-section WM within ``layer`` tokens, reduced in ``REDUCTION_ORDER``,
    closed by the brief (``first``, then the cuts' terms) in the room left."""
    if layer <= 0:
        return Summary(None, 0)
    leading = [term for term in dict.fromkeys(first) if term.lower() not in shown]
    reserve = fit_brief(leading, layer // FIRST_BRIEF_SHARE, counter)[1] if leading else 0
    summary, bodies = _reduce(sections, layer - reserve, counter)
    original = {section: sections.get(section, "").strip() for section in SECTIONS}
    return _with_brief(summary, original, bodies, layer, counter, shown, leading)


def _reduce(
    sections: Mapping[Section, str], layer: int, counter: TokenCounter
) -> tuple[Summary, dict[Section, str]]:
    """The summary of a seven-section WM within ``layer`` tokens, reduced in ``REDUCTION_ORDER``.

    Each section block is counted once and recounted only when a step changes it; the text that
    is sent is counted once at the end (token counts are not exactly additive across blocks, so
    that count decides, and reduction goes on while it is over the layer). A step that would not
    make the summary shorter (a body shorter than its cut marker) is skipped.
    """
    bodies = {section: sections.get(section, "").strip() for section in SECTIONS}
    if layer <= 0:
        return Summary(None, 0), bodies
    blocks = {section: counter(_section_block(section, bodies[section])) for section in SECTIONS}
    fixed = counter(f"{SUMMARY_HEADER}\n\n# Working Memory\n\n")
    steps = iter(REDUCTION_ORDER)
    cuts: list[Cut] = []
    while fixed + sum(blocks.values()) > layer:
        step = next(steps, None)
        if step is None:
            break
        before = bodies[step.section]
        cut = _apply(step, bodies)
        if cut is None:
            continue
        block = counter(_section_block(step.section, bodies[step.section]))
        if block >= blocks[step.section]:
            # A body shorter than its cut marker: cutting it would only make the summary longer.
            bodies[step.section] = before
            continue
        cuts.append(cut)
        blocks[step.section] = block
    text = _summary_text(bodies)
    tokens = counter(text)
    while tokens > layer:
        step = next(steps, None)
        if step is None:
            return Summary(None, 0), bodies
        before = bodies[step.section]
        cut = _apply(step, bodies)
        if cut is None:
            continue
        shorter = _summary_text(bodies)
        shorter_tokens = counter(shorter)
        if shorter_tokens >= tokens:
            bodies[step.section] = before
            continue
        cuts.append(cut)
        text, tokens = shorter, shorter_tokens
    return Summary(text, tokens, tuple(cuts)), bodies


def summarise_legacy(text: str, layer: int, counter: TokenCounter) -> Summary:
    """A legacy free-text summary within ``layer``: its leading lines that fit, the cut marked."""
    if layer <= 0:
        return Summary(None, 0)
    full = f"{SUMMARY_HEADER}\n\n{text.strip()}\n"
    tokens = counter(full)
    if tokens <= layer:
        return Summary(full, tokens)
    lines = text.strip().splitlines()

    def shortened(keep: int) -> str:
        marker = f"[cut: {len(lines) - keep} more lines, to fit the token budget]"
        return "\n".join([f"{SUMMARY_HEADER}\n", *lines[:keep], marker]) + "\n"

    low, high = -1, len(lines) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if counter(shortened(middle)) <= layer:
            low = middle
        else:
            high = middle - 1
    if low < 0:
        return Summary(None, 0)
    kept = shortened(low)
    return Summary(kept, counter(kept), (Cut(CutKind.TEXT, None, len(lines) - low),))


def summarise(
    working_memory: WorkingMemory,
    layer: int,
    counter: TokenCounter,
    shown: frozenset[str] = frozenset(),
    first: Sequence[str] = (),
) -> Summary:
    """The summary of a working memory: its sections, or its legacy free text. ``shown`` are the
    words of the raw messages sent beside it, which the brief leaves out; ``first`` the terms
    the brief lists before those of the cuts."""
    if working_memory.legacy_text is not None:
        return summarise_legacy(working_memory.legacy_text, layer, counter)
    return summarise_sections(working_memory.sections, layer, counter, shown, first)
