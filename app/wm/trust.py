"""The trust rules of Task & Goals: which new items are not the user's to keep.

Owns ``mark_unsourced``: an item whose only known sources are tool results or assistant messages,
a constraint that says the opposite of a kept one, one no user message stating a constraint gave
(its sources name none, and it quotes none word for word among the messages up to its batch's
last), and one that says the opposite of the message it cites are each marked, with the decision
reason each stands for. Reads the sources ``provenance`` gives. Pure.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from app.wm.guards import is_constraint
from app.wm.items import (
    Marker,
    is_heading,
    markers_of,
    normalise,
    split_items,
    strip_bullet,
    strip_markers,
    with_marker,
)
from app.wm.provenance import ItemSource, SectionSources, source_key
from app.wm.reasons import Reason
from app.wm.references import Seqs, normalised_seqs
from app.wm.reuse import Reuse, for_evidence
from app.wm.support import inverts, opposes, same_claim, supported

_LIST_LIMIT: Final = 50
_SETTLED: Final = frozenset(
    {
        Marker.LIFTED,
        Marker.DONE,
        Marker.RESOLVED,
        Marker.UNSOURCED,
        Marker.CONTRADICTS,
        Marker.CONFLICTING,
        Marker.TOOL_SOURCED,
    }
)
"""Markers of an item already judged: restored, closed, or marked by a trust rule."""
_MARKED: Final = frozenset(
    {Marker.UNSOURCED, Marker.CONTRADICTS, Marker.CONFLICTING, Marker.TOOL_SOURCED}
)


@dataclass(frozen=True, slots=True)
class Unsourced:
    """Task & Goals after the trust rules: the body, its sources, and the items each rule
    marked (by the decision reason it stands for, in ``TRUST_REASONS`` order)."""

    body: str
    sources: SectionSources
    marked: Mapping[Reason, list[str]] = field(default_factory=dict)


_QUOTE_MIN_WORDS: Final = 3
"""A constraint quotes a message word for word when its text of at least this many words is in
the message's."""

TRUST_REASONS: Final = (
    Reason.TOOL_SOURCED_INSTRUCTION,
    Reason.CONFLICTING_CONSTRAINT,
    Reason.CONTRADICTS_SOURCE,
    Reason.UNSOURCED_CONSTRAINT,
)
"""The Task & Goals decisions of the trust rules, the first found the section's reason."""
_MARKERS: Final = {
    Reason.TOOL_SOURCED_INSTRUCTION: Marker.TOOL_SOURCED,
    Reason.CONFLICTING_CONSTRAINT: Marker.CONFLICTING,
    Reason.CONTRADICTS_SOURCE: Marker.CONTRADICTS,
    Reason.UNSOURCED_CONSTRAINT: Marker.UNSOURCED,
}
_SENTENCE_END: Final = re.compile(r"(?<=[.!?;。！？；])\s*|\n+")


def _sentences(texts: Sequence[str]) -> list[str]:
    return [part for text in texts for part in _sentences_of(text)]


@functools.lru_cache(maxsize=4096)
def _sentences_of(text: str) -> tuple[str, ...]:
    """A cited text's sentences, split once however many items cite it."""
    return tuple(part for part in _SENTENCE_END.split(text) if part.strip())


def _verdict(
    text: str,
    established: Sequence[str],
    found: Seqs,
    evidence: Mapping[int, str],
    prior: Sequence[ItemSource],
) -> Reason | None:
    """Why a new Task & Goals constraint is not the user's to keep, or None when it is.

    A cited message of an earlier archive is read through the prior constraints it is the
    evidence of (their text is what is known of it here)."""
    if any(opposes(text, other) for other in established):
        return Reason.CONFLICTING_CONSTRAINT
    if not found:
        return Reason.UNSOURCED_CONSTRAINT
    said = [evidence[seq] for seq in found if seq in evidence]
    earlier: dict[int, list[str]] = {}
    for entry in prior:
        for seq in entry.evidence:
            earlier.setdefault(seq, []).append(strip_markers(entry.item))
    # Every seq found is one of this archive's (``evidence``) or a prior constraint's evidence.
    said += [text for seq in found if seq not in evidence for text in earlier.get(seq, ())]
    sentences = _sentences(said)
    if any(inverts(text, one) for one in sentences) and not any(
        same_claim(text, one) for one in sentences
    ):
        return Reason.CONTRADICTS_SOURCE
    return None if supported(text, said) else Reason.UNSOURCED_CONSTRAINT


def _found(key: str, entry: ItemSource, pool: set[int], shared: Reuse, upto: int | None) -> Seqs:
    """The constraint evidence for an item: its seqs among ``pool``, and the messages up to
    ``upto`` it quotes word for word."""
    quoted = shared.quoted(key) if len(key.split()) >= _QUOTE_MIN_WORDS else ()
    if upto is not None:
        quoted = tuple(seq for seq in quoted if seq <= upto)
    return normalised_seqs([*(seq for seq in entry.seqs if seq in pool), *quoted])


def mark_unsourced(
    body: str,
    sources: SectionSources,
    prior_body: str,
    prior: Sequence[ItemSource],
    evidence: Mapping[int, str],
    *,
    reuse: Reuse | None = None,
    upto: int | None = None,
) -> Unsourced:
    """Mark every new Task & Goals item that is not the user's to keep (a constraint or goal of
    the prior, or restored as ``[kept constraint]``, is never marked):

    - ``tool_sourced_instruction``: any item whose only known sources are tool results or
      assistant messages;
    - ``conflicting_constraint``: a constraint that says the opposite of a kept one;
    - ``unsourced_constraint``: a constraint no user message stating a constraint gave —
      neither do its sources name one (of ``evidence``, or the evidence of the prior's
      constraints), nor does it quote one word for word (three words or more) — or whose cited
      messages do not hold at least half of its content words;
    - ``contradicts_source``: a constraint that says the opposite of a sentence of the message
      it cites (and nowhere the same).
    """
    prior_items = split_items(prior_body)
    protected = {source_key(item) for item in prior_items if is_constraint(item)}
    # An item the prior held is carried, unless a trust rule had marked it: written again
    # without its marker, it is judged like a new one.
    carried = {source_key(item) for item in prior_items if not markers_of(item) & _MARKED}
    established = [strip_markers(item) for item in prior_items if is_constraint(item)]
    pool = set(evidence).union(*(entry.evidence for entry in prior))
    items: list[tuple[int, str]] = []
    lines = body.splitlines()
    for number, line in enumerate(lines):
        item = strip_bullet(line)
        if line.strip() and not is_heading(line) and item:
            items.append((number, item))
    kept = list(sources)
    reasons: dict[int, Reason] = {}
    # Restored constraints first: a new item is judged against every constraint kept.
    order = sorted(
        range(len(items)), key=lambda i: Marker.KEPT_CONSTRAINT not in markers_of(items[i][1])
    )
    shared = for_evidence(reuse, evidence)
    for index in order:
        item, entry = items[index][1], kept[index]
        key = source_key(item)
        constraint = is_constraint(item)
        found: Seqs = ()
        if key in protected:
            reason = None
            found = _found(key, entry, pool, shared, upto)
        elif (key in carried and not constraint) or markers_of(item) & _SETTLED:
            continue
        elif not entry.instructs:
            reason = Reason.TOOL_SOURCED_INSTRUCTION
        elif not constraint:
            continue
        else:
            found = _found(key, entry, pool, shared, upto)
            reason = _verdict(strip_markers(item), established, found, evidence, prior)
        if reason is None:
            kept[index] = replace(
                entry, seqs=normalised_seqs([*entry.seqs, *found]), evidence=found
            )
            established.append(strip_markers(item))
        else:
            reasons[index] = reason
    marked: dict[Reason, list[str]] = {}
    present = {normalise(item) for index, (_, item) in enumerate(items) if index not in reasons}
    repeated: set[int] = set()
    for index, reason in sorted(reasons.items()):
        number, item = items[index]
        item = with_marker(_MARKERS[reason], item)
        marked.setdefault(reason, []).append(item)
        if normalise(item) in present:
            # The same plant again: marked once is enough, the copy is left out.
            repeated.add(index)
            continue
        present.add(normalise(item))
        lines[number] = f"- {item}"
        kept[index] = ItemSource(item, kept[index].seqs, authority=kept[index].authority)
    left_out = {items[index][0] for index in repeated}
    return Unsourced(
        "\n".join(line for number, line in enumerate(lines) if number not in left_out),
        tuple(entry for index, entry in enumerate(kept) if index not in repeated),
        {
            reason: sorted(marked[reason], key=lambda line: body.find(strip_markers(line)))[
                :_LIST_LIMIT
            ]
            for reason in TRUST_REASONS
            if reason in marked
        },
    )
