"""The steps of one context after its reads, pure: assemble, then (with fill) the covered
messages and what a reduced summary displaces.

One function for the service that reads the inputs and for the ledger that rebuilds a recorded
context from the rows it names: the same inputs give the same bytes. Never reads anything; the
caller reads the covered messages when ``covered_tokens`` asks for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.archives.working_memory import WorkingMemory
from app.context.assembly import Assembly, Hint, Window, assemble
from app.context.budget import Budget
from app.context.clearing import Clearing
from app.context.fill import choose_fill, fill_room, with_fill
from app.context.share import displaced, displaced_terms, is_reduced
from app.memories.records import SearchHit
from app.pins.records import Pin
from app.sessions.records import StoredMessage
from app.wm.tokens import TokenCounter


@dataclass(frozen=True, slots=True)
class Inputs:
    """Everything a context is assembled from but the covered messages."""

    budget: Budget
    window: Window
    working_memory: WorkingMemory | None
    hint: Hint
    recalled: Sequence[SearchHit] = ()
    pins: Sequence[Pin] = ()
    clearing: Clearing | None = None
    fill: bool = False


def first_pass(inputs: Inputs, counter: TokenCounter, first_terms: Sequence[str] = ()) -> Assembly:
    return assemble(
        inputs.budget,
        inputs.window,
        working_memory=inputs.working_memory,
        hint=inputs.hint,
        counter=counter,
        recalled=inputs.recalled,
        pins=inputs.pins,
        clearing=inputs.clearing,
        first_terms=first_terms,
    )


def covered_tokens(result: Assembly, inputs: Inputs) -> int:
    """How far back (in tokens) the covered messages must be read: 0 when they are not needed.
    A reduced summary displaces covered messages truncation would send (``share``): they are
    read as far back as the whole usable budget, and their terms lead its brief."""
    if not inputs.fill:
        return 0
    if is_reduced(result):
        return inputs.budget.usable
    return fill_room(result, inputs.budget.usable)


def finish(
    result: Assembly, inputs: Inputs, covered: Sequence[StoredMessage], counter: TokenCounter
) -> Assembly:
    """The first pass with fill: the covered messages that fit, and, when the summary was
    reduced, assembled again with the terms of what it displaced leading its brief."""
    usable = inputs.budget.usable

    def filled(assembly: Assembly) -> Assembly:
        chosen = choose_fill(
            covered,
            fill_room(assembly, usable),
            clearing=inputs.clearing,
            kept_before=assembly.kept_whole,
            counter=counter,
        )
        return with_fill(assembly, chosen)

    reduced = is_reduced(result)
    result = filled(result)
    if reduced:
        gone = displaced(covered, result, usable, counter)
        if gone:
            result = filled(first_pass(inputs, counter, displaced_terms(gone)))
    return result
