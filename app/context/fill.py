"""Fill: the room an assembled context leaves under its budget, given to covered raw messages.

Pure. Owns which of the newest messages the summary already covers go in (whole tool groups,
newest first, a contiguous run ending at the summary's boundary) and when a context has room
for them at all. Never changes the summary, the hint or the unsummarised messages: filling
only adds what fits after everything else was decided.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from app.context.assembly import Assembly
from app.context.clearing import Clearing, clear_units
from app.context.outgoing import outgoing
from app.context.units import group_units
from app.sessions.records import StoredMessage
from app.wm.tokens import TokenCounter, count_tokens

DEFAULT_FILL: Final = False
"""Off unless asked: at the default budget a fill would send most of a long history on every
call (docs/context.md has the measurements that decided it)."""


@dataclass(frozen=True, slots=True)
class Filled:
    """The covered messages that went in, oldest first, their tokens, and the tool results
    among them sent as a placeholder (seq, tokens saved)."""

    messages: tuple[StoredMessage, ...]
    tokens: int
    cleared: tuple[tuple[int, int], ...] = ()

    @property
    def seqs(self) -> tuple[int, ...]:
        return tuple(message.seq for message in self.messages)


NOTHING_FILLED = Filled((), 0)


def fill_room(assembly: Assembly, usable: int) -> int:
    """Tokens a fill may take: what is left under ``usable`` once everything else is in.

    Zero unless the summary was sent and every unsummarised message that can be sent went in:
    covered messages never take room an unsummarised one needed, and never stand between the
    summary and a gap.
    """
    summary = assembly.summary
    if summary is None or summary.text is None or assembly.omitted or assembly.over_budget:
        return 0
    return max(0, usable - assembly.total)


def choose_fill(
    covered: Sequence[StoredMessage],
    room: int,
    *,
    clearing: Clearing | None = None,
    kept_before: int = 0,
    counter: TokenCounter = count_tokens,
) -> Filled:
    """The newest units of ``covered`` (oldest first, ending at the summary's boundary) that
    fit ``room``, walked newest first: the first unit that does not fit stops the walk, so
    nothing older goes in without everything newer, exactly as truncation would choose.

    ``covered`` may start inside a tool group (its call is older than what was read): those
    leading results are not a unit. Messages no chat server accepts as they are (an orphan
    result, an unanswered call) are never sent and do not stop the walk. With ``clearing``,
    tool results are cleared as in the rest of the context (``kept_before`` results already
    kept whole by the newer messages), and units are fitted at what they cost then: the room
    clearing saves goes to more history.
    """
    if room <= 0:
        return NOTHING_FILLED
    units, _ = group_units(covered, complete=False)
    saved: dict[int, int] = {}
    if clearing is not None:
        result = clear_units(units, clearing, counter, kept_before=kept_before)
        units, saved = result.units, dict(result.saved)
    kept: list[StoredMessage] = []
    remaining = room
    for unit in reversed(units):
        if unit.tokens > remaining:
            break
        kept[:0] = unit.members
        remaining -= unit.tokens
    cleared = tuple((m.seq, saved[m.seq]) for m in kept if m.seq in saved)
    return Filled(tuple(kept), room - remaining, cleared)


def with_fill(assembly: Assembly, filled: Filled) -> Assembly:
    """The assembly with ``filled`` placed between the summary (with the recalled memories and
    the pins) and the unsummarised messages."""
    if not filled.messages:
        return assembly
    sent: list[dict[str, Any]] = []
    sanitised = 0
    for message in filled.messages:
        out, changed = outgoing(message.message)
        sent.append(out)
        sanitised += changed
    # After the summary, [Relevant Memories] and [Pinned], before the unsummarised messages.
    head = assembly.head_messages
    summary, rest = assembly.messages[:head], assembly.messages[head:]
    return replace(
        assembly,
        messages=[*summary, *sent, *rest],
        filled=filled.messages,
        filled_tokens=filled.tokens,
        sanitised=assembly.sanitised + sanitised,
        cleared=(*filled.cleared, *assembly.cleared),
    )
