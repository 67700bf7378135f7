"""Context assembly, pure: what of the summary and the raw messages one model call receives.

Data in, decision out: no I/O, clock, database or web framework. The service loads the working
memory and the newest raw messages; this module puts the pieces together (``budget``, ``units``,
``summary``, ``outgoing``) in priority order, and never emits a list a strict chat-completions
server would reject.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from app.archives.working_memory import WorkingMemory
from app.context.brief import shown_words
from app.context.budget import Budget
from app.context.clearing import Clearing, clear_units
from app.context.outgoing import outgoing
from app.context.pinned import NO_PINS, Pinned, pinned_block
from app.context.recall import NO_RECALL, RECALL_SHARE, Recall, recall_block
from app.context.summary import Summary, summarise
from app.context.units import Dropped, Unit, fit_units, group_units, newest_user_index
from app.memories.records import SearchHit
from app.pins.records import Pin
from app.sessions.records import StoredMessage
from app.wm.messages import read_messages
from app.wm.tokens import TokenCounter

SUMMARY_FLOOR_SHARE: Final = 4
"""The summary may always take a quarter of the usable budget (within its layer), however many
unsummarised messages would fill it."""

CUT_NOTE: Final = (
    'Parts of the summary marked "[cut ...]" were shortened to fit the token budget; the same '
    "session's /working-memory path returns them in full."
)
"""Added to the hint when the summary was reduced and the note still fits."""


@dataclass(frozen=True, slots=True)
class Window:
    """The newest raw messages not covered by the summary, oldest first, up to the newest one.

    ``floor_seq`` is the last seq the summary covers (0 without one). The window may start later
    than ``floor_seq + 1`` when the older messages cannot fit anyway; those are left out.
    """

    candidates: Sequence[StoredMessage]
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
    recall: Recall = NO_RECALL
    """The ``[Relevant Memories]`` block, when the request asked to recall."""
    filled: tuple[StoredMessage, ...] = ()
    """Covered messages sent after the summary (``fill``), oldest first; not ``included_seqs``."""
    filled_tokens: int = 0
    pinned: Pinned = NO_PINS
    """The ``[Pinned]`` block, after the summary and the recalled memories."""
    cleared: tuple[tuple[int, int], ...] = ()
    """Tool results sent as a placeholder (``clear_tool_results``): (seq, tokens saved)."""
    kept_whole: int = 0
    """Tool results clearing kept whole among the unsummarised messages (fill goes on counting)."""
    summary_layer: int = 0
    """The room the sent summary was reduced to fit: the same working memory within the same
    room is the same text (what the context ledger rebuilds it from)."""

    @property
    def total(self) -> int:
        return (
            self.hint_tokens
            + self.wm_tokens
            + self.recall.tokens
            + self.pinned.tokens
            + self.message_tokens
            + self.filled_tokens
        )

    @property
    def head_messages(self) -> int:
        """How many messages open the list before any raw one: summary, memories, pins."""
        return sum(
            text is not None
            for text in (
                None if self.summary is None else self.summary.text,
                self.recall.text,
                self.pinned.text,
            )
        )

    @property
    def tokens_saved(self) -> int:
        return sum(saved for _, saved in self.cleared)


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


def message_words(messages: Sequence[dict[str, Any]]) -> frozenset[str]:
    """The words of raw messages as a model reads them: text, tool calls and tool results."""
    texts: list[str] = []
    for view in read_messages(list(messages)):
        texts.append(view.text)
        texts += [f"{call.name} {call.arguments}" for call in view.tool_calls]
    return shown_words(texts)


def _units_words(units: Sequence[Unit]) -> frozenset[str]:
    return message_words([dict(member.message) for unit in units for member in unit.members])


def assemble(
    budget: Budget,
    window: Window,
    *,
    working_memory: WorkingMemory | None,
    hint: Hint,
    counter: TokenCounter,
    recalled: Sequence[SearchHit] = (),
    pins: Sequence[Pin] = (),
    clearing: Clearing | None = None,
    first_terms: Sequence[str] = (),
) -> Assembly:
    """Decide what is sent. Priorities, highest first: the newest user message, the system-prompt
    hint, the pins and the summary (sharing the summary's layer, pins first), the recalled
    memories (at most a quarter of the usable budget), then raw messages newest first. The
    summary opens the list, the ``[Relevant Memories]`` and ``[Pinned]`` blocks follow it.
    ``working_memory`` is the newest done archive's, ``None`` when no archive is done yet.

    The hint, the pins and the summary give way to the newest user message: their layer is
    ``min(wm_layer, usable - hint - newest user message)``; the hint is left out only when it and
    that message alone exceed the usable budget. Within the layer the summary is reduced, every
    section of it, before a pin is left out. With ``clearing``, older tool results are sent as a
    placeholder, and raw messages are fitted at what they cost then. ``first_terms`` lead the
    summary's brief (``share``: what the newest summarised messages not sent raw hold).
    """
    units, dropped = group_units(window.candidates, complete=window.complete)
    saved: dict[int, int] = {}
    kept_whole = 0
    if clearing is not None:
        cleared = clear_units(units, clearing, counter)
        units, saved, kept_whole = cleared.units, dict(cleared.saved), cleared.kept
    forced_index = newest_user_index(units)
    forced_tokens = units[forced_index].tokens if forced_index is not None else 0
    usable = budget.usable

    def fitting(text: str) -> tuple[str, int, bool]:
        tokens = counter(text) if text else 0
        if tokens + forced_tokens > usable:
            return "", 0, bool(text)
        return text, tokens, False

    text, hint_tokens, hint_omitted = fitting(
        hint.with_summary if working_memory is not None else hint.without_summary
    )
    layer = max(0, min(budget.wm_layer, usable - hint_tokens - forced_tokens))
    pinned = pinned_block(pins, layer, counter)
    # A pin is left out only when nothing of the summary could be sent beside the pins.
    layer = layer - pinned.tokens if not pinned.left_out else 0
    # Pins aside, the unsummarised messages come before the summary: they are truncation's own
    # newest messages, and no summary holds them. The summary takes the room they leave, and
    # never less than its floor: a long tail not yet committed must not hide all older history.
    room = usable - hint_tokens - pinned.tokens
    raw_tokens = max(forced_tokens, fit_units(units, room).tokens)
    layer = max(0, min(layer, max(usable // SUMMARY_FLOOR_SHARE, room - raw_tokens)))
    # What a reduced summary's brief need not repeat: the raw messages sure to be sent beside it.
    shown = _units_words(fit_units(units, room - layer).included) if units else frozenset()
    summary = (
        None
        if working_memory is None
        else summarise(working_memory, layer, counter, shown, first_terms)
    )
    summary_layer = layer
    wm_tokens = summary.tokens if summary is not None else 0
    if summary is not None and summary.text is None and not hint_omitted:
        text, hint_tokens, hint_omitted = fitting(hint.without_summary)
    if text and working_memory is not None and summary is not None and summary.cuts:
        # The note that explains the cuts takes its room from the summary's layer, never from
        # the unsummarised messages.
        noted = f"{text} {CUT_NOTE}"
        noted_tokens = counter(noted)
        noted_layer = layer - (noted_tokens - hint_tokens)
        shorter = summarise(working_memory, noted_layer, counter, shown, first_terms)
        if shorter.text is not None:
            summary, wm_tokens, summary_layer = shorter, shorter.tokens, noted_layer
            text, hint_tokens = noted, noted_tokens
    head_tokens = hint_tokens + wm_tokens + pinned.tokens
    room = max(0, min(usable // RECALL_SHARE, usable - head_tokens - forced_tokens))
    recall = recall_block(recalled, room, counter)
    fit = fit_units(units, usable - head_tokens - recall.tokens)

    messages: list[dict[str, Any]] = []
    if summary is not None and summary.text is not None:
        messages.append({"role": "user", "content": summary.text})
    if recall.text is not None:
        messages.append({"role": "user", "content": recall.text})
    if pinned.text is not None:
        messages.append({"role": "user", "content": pinned.text})
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
        over_budget=head_tokens + recall.tokens + fit.tokens > usable,
        hint_omitted=hint_omitted,
        wm_layer=layer,
        recall=recall,
        pinned=pinned,
        cleared=tuple((seq, saved[seq]) for seq in included if seq in saved),
        kept_whole=kept_whole,
        summary_layer=summary_layer,
    )
