"""Context assembly, pure: the reply reserve, the working-memory layer and its ordered reduction,
and the newest-first fitting of raw messages with tool groups kept whole (DESIGN 7).

Data in, decision out: no I/O, clock, database or web framework. The service loads the newest
done archive's sections and the newest raw messages; this module decides what of them is sent,
and never emits a list a strict chat-completions server would reject.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from app.wm.items import is_heading
from app.wm.sections import SECTIONS, Section, render
from app.wm.tokens import TokenCounter

DEFAULT_TOKEN_BUDGET: Final = 128_000
MAX_TOKEN_BUDGET: Final = 10_000_000
REPLY_RESERVE_SHARE: Final = 15
"""Percent of the budget kept for the reply, at least ``REPLY_RESERVE_MIN``, at most half."""
REPLY_RESERVE_MIN: Final = 20_000
WM_LAYER_CAP: Final = 8_000
FILES_KEEP_FIRST: Final = 20
KEY_FACTS_KEEP_NEWEST: Final = 25

SUMMARY_HEADER: Final = "[Session History Summary]"
SECTION_CUT_MARKER: Final = "[cut to fit the token budget]"
CUT_NOTE: Final = (
    'Parts of the summary marked "[cut ...]" were shortened to fit the token budget; the same '
    "session's /working-memory path returns them in full."
)
"""Added to the hint when the summary was reduced and the note still fits."""


# Budget -----------------------------------------------------------------------------------------


def reply_reserve(budget: int) -> int:
    """``min(max(15 % of budget, 20 000), 50 % of budget)``, in whole tokens rounded down."""
    return min(max(budget * REPLY_RESERVE_SHARE // 100, REPLY_RESERVE_MIN), budget // 2)


@dataclass(frozen=True, slots=True)
class Budget:
    budget: int
    reserved: int

    @property
    def usable(self) -> int:
        """What the assembled context may use: the budget minus the reply reserve."""
        return self.budget - self.reserved

    @property
    def wm_layer(self) -> int:
        """The most the summary may take: ``min(8 000, 50 % of the usable budget)``."""
        return min(WM_LAYER_CAP, self.usable // 2)


class InvalidBudget(ValueError):
    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field_name = field_name
        self.message = message


def plan_budget(budget: int, reserve_tokens: int | None = None) -> Budget:
    """The budget with its reply reserve; ``reserve_tokens`` overrides the formula (0 allowed)."""
    if not 1 <= budget <= MAX_TOKEN_BUDGET:
        raise InvalidBudget("token_budget", f"token_budget must be 1 to {MAX_TOKEN_BUDGET}")
    reserved = reply_reserve(budget) if reserve_tokens is None else reserve_tokens
    if not 0 <= reserved < budget:
        raise InvalidBudget(
            "reserve_tokens", "reserve_tokens must be at least 0 and less than token_budget"
        )
    return Budget(budget, reserved)


# Messages, tool groups ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    """One stored message that may be sent: its ``seq``, the OpenAI dict, its stored token count."""

    seq: int
    message: Mapping[str, Any]
    tokens: int

    @property
    def role(self) -> str:
        return str(self.message.get("role", ""))


@dataclass(frozen=True, slots=True)
class Unit:
    """Kept or left out as a whole: one message, or a tool group (a call and its results)."""

    members: tuple[Candidate, ...]

    @property
    def tokens(self) -> int:
        return sum(member.tokens for member in self.members)

    @property
    def head(self) -> Candidate:
        return self.members[0]

    @property
    def is_user(self) -> bool:
        return self.head.role == "user"


class DropReason(StrEnum):
    ORPHAN_TOOL_RESULT = "orphan_tool_result"
    """A tool message that answers no call directly before it."""
    UNANSWERED_TOOL_CALLS = "unanswered_tool_calls"
    """A tool call whose results are missing, followed by other messages."""
    AWAITING_TOOL_RESULTS = "awaiting_tool_results"
    """The newest message is a tool call whose results have not been appended yet."""
    INVALID_TOOL_CALLS = "invalid_tool_calls"
    """A tool-call list a chat server rejects (an id missing or used twice)."""


@dataclass(frozen=True, slots=True)
class Dropped:
    seq: int
    reason: DropReason


def _tool_call_ids(message: Mapping[str, Any]) -> list[str | None]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return []
    return [
        call.get("id") if isinstance(call, Mapping) and isinstance(call.get("id"), str) else None
        for call in calls
    ]


def group_units(
    candidates: Sequence[Candidate], *, complete: bool
) -> tuple[list[Unit], list[Dropped]]:
    """Units of a run of consecutive messages, oldest first, and the messages that can never be
    sent as they are (a strict server would reject them), with why.

    ``complete`` says the run starts at the summary's boundary. When it does not, leading tool
    messages belong to a group whose call is older than the run: they are outside, not malformed.
    """
    units: list[Unit] = []
    dropped: list[Dropped] = []
    index = 0
    if not complete:
        while index < len(candidates) and candidates[index].role == "tool":
            index += 1
    while index < len(candidates):
        head = candidates[index]
        if head.role == "tool":
            dropped.append(Dropped(head.seq, DropReason.ORPHAN_TOOL_RESULT))
            index += 1
            continue
        ids = _tool_call_ids(head.message) if head.role == "assistant" else []
        if not ids:
            units.append(Unit((head,)))
            index += 1
            continue
        owed = [call_id for call_id in ids if call_id is not None]
        valid = len(owed) == len(ids) and len(set(owed)) == len(owed)
        end = index + 1
        while (
            valid
            and owed
            and end < len(candidates)
            and candidates[end].role == "tool"
            and candidates[end].message.get("tool_call_id") in owed
        ):
            owed.remove(str(candidates[end].message.get("tool_call_id")))
            end += 1
        if valid and not owed:
            units.append(Unit(tuple(candidates[index:end])))
        else:
            if not valid:
                reason = DropReason.INVALID_TOOL_CALLS
            elif end == len(candidates):
                reason = DropReason.AWAITING_TOOL_RESULTS
            else:
                reason = DropReason.UNANSWERED_TOOL_CALLS
            dropped.extend(Dropped(member.seq, reason) for member in candidates[index:end])
        index = end
    return units, dropped


def newest_user_index(units: Sequence[Unit]) -> int | None:
    for index in range(len(units) - 1, -1, -1):
        if units[index].is_user:
            return index
    return None


@dataclass(frozen=True, slots=True)
class Fit:
    included: tuple[Unit, ...]
    """Oldest first."""
    tokens: int
    over_budget: bool


def fit_units(units: Sequence[Unit], budget: int) -> Fit:
    """Units that fit ``budget``, fitted newest first; the newest user message always goes in.

    What is kept is a contiguous run ending at the newest unit, except when the units after the
    newest user message do not all fit: then that message and the newest units that fit go in,
    and the older units between them are left out. A unit that does not fit stops the walk, so no
    older message ever appears without the newer ones around it. Only the newest user message on
    its own can exceed the budget; ``over_budget`` says so.
    """
    forced = newest_user_index(units)
    remaining = budget
    if forced is not None:
        remaining -= units[forced].tokens
    kept: list[int] = []
    index = len(units) - 1
    while index >= 0:
        if index == forced:
            kept.append(index)
        elif units[index].tokens <= remaining:
            kept.append(index)
            remaining -= units[index].tokens
        else:
            break
        index -= 1
    if forced is not None and forced not in kept:
        kept.append(forced)
    included = tuple(units[i] for i in sorted(kept))
    tokens = sum(unit.tokens for unit in included)
    return Fit(included, tokens, tokens > budget)


# Outgoing messages --------------------------------------------------------------------------------

# The chat-completions request schema per role: other keys are rejected as "additional
# properties", so fields a client stored beside a message (a tool result's ``name``) stay home.
_OUTGOING_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "system": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset(
        {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"}
    ),
    "tool": frozenset({"role", "content", "tool_call_id"}),
}
_TOOL_CALL_KEYS: Final = frozenset({"id", "type", "function"})
_FUNCTION_KEYS: Final = frozenset({"name", "arguments"})
_PARTICIPANT_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def outgoing(message: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """The message as a chat-completions request accepts it, and whether anything was removed."""
    allowed = _OUTGOING_KEYS.get(str(message.get("role")))
    if allowed is None:
        return dict(message), False
    sent = {key: value for key, value in message.items() if key in allowed}
    changed = len(sent) != len(message)
    name = sent.get("name")
    if "name" in sent and not (isinstance(name, str) and _PARTICIPANT_NAME.match(name)):
        del sent["name"]
        changed = True
    calls = sent.get("tool_calls")
    if isinstance(calls, list):
        if not calls:
            del sent["tool_calls"]
            changed = True
        else:
            cleaned = [_outgoing_call(call) for call in calls]
            if cleaned != calls:
                sent["tool_calls"] = cleaned
                changed = True
    return sent, changed


def _outgoing_call(call: object) -> object:
    if not isinstance(call, Mapping):
        return call
    sent = {key: value for key, value in call.items() if key in _TOOL_CALL_KEYS}
    function = sent.get("function")
    if isinstance(function, Mapping):
        sent["function"] = {key: value for key, value in function.items() if key in _FUNCTION_KEYS}
    return sent


# The working-memory summary -----------------------------------------------------------------------


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


REDUCTION_ORDER: Final[tuple[ReductionStep, ...]] = (
    ReductionStep(CutKind.ITEMS, Section.FILES, keep=FILES_KEEP_FIRST),
    ReductionStep(CutKind.ITEMS, Section.KEY_FACTS, keep=KEY_FACTS_KEEP_NEWEST, keep_newest=True),
    ReductionStep(CutKind.SECTION, Section.SESSION_TITLE),
    ReductionStep(CutKind.SECTION, Section.FILES),
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
    removed = len(items) - step.keep
    if removed <= 0:
        return None
    lines = body.splitlines()
    if step.keep_newest:
        marker = f"- [cut: {removed} older items, to fit the token budget]"
        bodies[step.section] = "\n".join([marker, *lines[items[removed] :]])
    else:
        marker = f"- [cut: {removed} more items, to fit the token budget]"
        bodies[step.section] = "\n".join([*lines[: items[step.keep]], marker]).strip()
    return Cut(CutKind.ITEMS, step.section, removed)


def _summary_text(bodies: Mapping[Section, str]) -> str:
    return f"{SUMMARY_HEADER}\n\n{render(bodies)}"


def _section_block(section: Section, body: str) -> str:
    return f"## {section.value}\n{body}\n\n" if body else f"## {section.value}\n\n"


def summarise_sections(
    sections: Mapping[Section, str], layer: int, counter: TokenCounter
) -> Summary:
    """The summary of a seven-section WM within ``layer`` tokens, reduced in ``REDUCTION_ORDER``.

    Each section block is counted once and recounted only when a step changes it; the text that
    is sent is counted once at the end (token counts are not exactly additive across blocks, so
    that count decides, and reduction goes on while it is over the layer). A step that would not
    make the summary shorter (a body shorter than its cut marker) is skipped.
    """
    if layer <= 0:
        return Summary(None, 0)
    bodies = {section: sections.get(section, "").strip() for section in SECTIONS}
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
            return Summary(None, 0)
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
    return Summary(text, tokens, tuple(cuts))


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


@dataclass(frozen=True, slots=True)
class SummarySource:
    """The newest done archive's WM: its seven section bodies, or a legacy free-text overview."""

    sections: Mapping[Section, str] | None = None
    legacy_text: str | None = None

    def summarise(self, layer: int, counter: TokenCounter) -> Summary:
        if self.sections is not None:
            return summarise_sections(self.sections, layer, counter)
        return summarise_legacy(self.legacy_text or "", layer, counter)


# Assembly -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    """The newest raw messages not covered by the summary, oldest first, up to the newest one.

    ``floor_seq`` is the last seq the summary covers (0 without one). The window may start later
    than ``floor_seq + 1`` when the older messages cannot fit anyway; those are left out.
    """

    candidates: Sequence[Candidate]
    floor_seq: int
    last_seq: int

    @property
    def start_seq(self) -> int:
        return self.candidates[0].seq if self.candidates else self.last_seq + 1

    @property
    def complete(self) -> bool:
        return self.start_seq == self.floor_seq + 1


@dataclass(frozen=True, slots=True)
class Hint:
    """The system-prompt text for a context that opens with the summary, and for one whose
    summary was left out for the budget (the same text when there is no summary)."""

    with_summary: str
    without_summary: str

    @classmethod
    def same(cls, text: str) -> Hint:
        return cls(text, text)


@dataclass(frozen=True, slots=True)
class Assembly:
    messages: list[dict[str, Any]]
    """What to pass as ``messages``: the summary (if any), then raw messages, oldest first."""
    system_prompt_addition: str
    summary: Summary | None
    included_seqs: tuple[int, ...]
    dropped: tuple[Dropped, ...]
    omitted: tuple[tuple[int, int], ...]
    """Seq ranges not covered by the summary and left out to fit the budget."""
    sanitised: int
    newest_user_seq: int | None
    hint_tokens: int
    wm_tokens: int
    message_tokens: int
    over_budget: bool
    hint_omitted: bool
    wm_layer: int
    """The layer the summary had after the newest user message and the hint took their share."""

    @property
    def total(self) -> int:
        return self.hint_tokens + self.wm_tokens + self.message_tokens


def _omitted_ranges(
    window: Window, included: set[int], dropped: set[int]
) -> tuple[tuple[int, int], ...]:
    ranges: list[tuple[int, int]] = []
    if window.start_seq > window.floor_seq + 1:
        ranges.append((window.floor_seq + 1, window.start_seq - 1))
    for candidate in window.candidates:
        seq = candidate.seq
        if seq in included or seq in dropped:
            continue
        if ranges and ranges[-1][1] == seq - 1:
            ranges[-1] = (ranges[-1][0], seq)
        else:
            ranges.append((seq, seq))
    return tuple(ranges)


def assemble(
    budget: Budget,
    window: Window,
    *,
    source: SummarySource | None,
    hint: Hint,
    counter: TokenCounter,
) -> Assembly:
    """Decide what is sent. Priorities, highest first: the newest user message, the system-prompt
    hint, the summary (within its layer), then raw messages newest first.

    The hint and the summary give way to the newest user message: the summary layer is
    ``min(wm_layer, usable - hint - newest user message)``; the hint is left out only when it and
    that message alone exceed the usable budget.
    """
    units, dropped = group_units(window.candidates, complete=window.complete)
    forced_index = newest_user_index(units)
    forced_tokens = units[forced_index].tokens if forced_index is not None else 0
    usable = budget.usable

    def fitting(text: str) -> tuple[str, int, bool]:
        tokens = counter(text) if text else 0
        if tokens + forced_tokens > usable:
            return "", 0, bool(text)
        return text, tokens, False

    text, hint_tokens, hint_omitted = fitting(
        hint.with_summary if source is not None else hint.without_summary
    )
    layer = max(0, min(budget.wm_layer, usable - hint_tokens - forced_tokens))
    summary = source.summarise(layer, counter) if source is not None else None
    wm_tokens = summary.tokens if summary is not None else 0
    if summary is not None and summary.text is None and not hint_omitted:
        text, hint_tokens, hint_omitted = fitting(hint.without_summary)
    if text and summary is not None and summary.cuts:
        noted = f"{text} {CUT_NOTE}"
        noted_tokens = counter(noted)
        if noted_tokens + wm_tokens + forced_tokens <= usable:
            text, hint_tokens = noted, noted_tokens
    fit = fit_units(units, usable - hint_tokens - wm_tokens)

    messages: list[dict[str, Any]] = []
    if summary is not None and summary.text is not None:
        messages.append({"role": "user", "content": summary.text})
    sanitised = 0
    included: list[int] = []
    for unit in fit.included:
        for member in unit.members:
            sent, changed = outgoing(member.message)
            messages.append(sent)
            sanitised += changed
            included.append(member.seq)
    dropped_seqs = {item.seq for item in dropped}
    return Assembly(
        messages=messages,
        system_prompt_addition=text,
        summary=summary,
        included_seqs=tuple(included),
        dropped=tuple(dropped),
        omitted=_omitted_ranges(window, set(included), dropped_seqs),
        sanitised=sanitised,
        newest_user_seq=units[forced_index].head.seq if forced_index is not None else None,
        hint_tokens=hint_tokens,
        wm_tokens=wm_tokens,
        message_tokens=fit.tokens,
        over_budget=hint_tokens + wm_tokens + fit.tokens > usable,
        hint_omitted=hint_omitted,
        wm_layer=layer,
    )
