"""Provenance of working-memory items: which messages each item came from, through every merge.

Owns the per-item sources stored with a section version: read from a model's trailing
references (``references``) or given by the offline extractor, carried over from the prior for
an item that stays, and united when an UPDATE folds prior items into one. Owns the unsourced
constraint rule too: a new Task & Goals constraint whose sources name no user message stating a
constraint is marked ``[unsourced]``. Pure; never loads messages and never applies an op.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from app.wm.absorption import absorbing
from app.wm.authority import authority_of
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
from app.wm.ops import OpKind, SectionOp, append, update
from app.wm.reasons import Reason
from app.wm.references import SeqRange, Seqs, cite, normalised_seqs, with_reference
from app.wm.reuse import Reuse, for_evidence, for_roles
from app.wm.sections import SECTIONS, Section
from app.wm.support import inverts, opposes, same_claim, supported

_LIST_LIMIT: Final = 50
_NOT_INSTRUCTING: Final = frozenset({"assistant", "tool"})
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


@functools.lru_cache(maxsize=16384)
def source_key(item: str) -> str:
    """What identifies an item across versions: its text without bullet and markers, normalised
    (``[resolved] X`` is still ``X``, whose sources it keeps)."""
    return normalise(strip_markers(item))


@dataclass(frozen=True, slots=True)
class ItemSource:
    """One item of a section body and the seqs of the messages it came from.

    ``evidence`` (Task & Goals constraints only) is the part of ``seqs`` that are user messages
    stating a constraint: what makes the constraint the user's rather than the model's.
    ``authority`` is who its sources are (of ``AUTHORITIES``): the roles of the messages it
    came from, as far as they are known.
    """

    item: str
    seqs: Seqs = ()
    evidence: Seqs = ()
    authority: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        value: dict[str, object] = {"item": self.item, "seqs": list(self.seqs)}
        if self.evidence:
            value["evidence"] = list(self.evidence)
        if self.authority:
            value["authority"] = list(self.authority)
        return value

    @property
    def instructs(self) -> bool:
        """Whether the item may be an instruction: unless its only known sources are tool
        results or assistant messages."""
        return not self.authority or not set(self.authority) <= _NOT_INSTRUCTING


SectionSources = tuple[ItemSource, ...]


def sources_from_json(value: object) -> SectionSources:
    """Stored sources read back leniently: entries that are not well formed are skipped."""
    if not isinstance(value, list):
        return ()
    found: list[ItemSource] = []
    for entry in value:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("item"), str):
            continue
        found.append(
            ItemSource(
                entry["item"],
                _seqs_of(entry.get("seqs")),
                _seqs_of(entry.get("evidence")),
                authority_of(entry.get("authority")),
            )
        )
    return tuple(found)


def _seqs_of(value: Any) -> Seqs:
    if not isinstance(value, list):
        return ()
    return normalised_seqs(s for s in value if isinstance(s, int) and not isinstance(s, bool))


@dataclass(frozen=True, slots=True)
class Provenance:
    """What the merge needs to give every item its sources.

    ``allowed``: the seqs a reference may name (the messages the archive and its prior cover).
    ``prior``: the prior's item sources by section. ``cited``: sources given beside the ops by
    ``source_key`` (the offline extractor's, for every section); ``None`` means they are read
    from the ops' trailing references (a model). ``evidence``: the user messages of this
    archive that state a constraint, by seq, their text normalised. ``roles``: the role of each
    message of this archive by seq (a pinned message counts as ``pin`` too). ``reuse``: what
    earlier batches of the same archive found of the same ``evidence`` and ``roles``.
    """

    allowed: SeqRange
    prior: Mapping[Section, SectionSources] = field(default_factory=dict)
    cited: Mapping[str, Seqs] | None = None
    evidence: Mapping[int, str] = field(default_factory=dict)
    roles: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    reuse: Reuse | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ReadOp:
    """An op with its references taken out: the op the guards see, the seqs by ``source_key``,
    and the references that named messages outside the allowed range."""

    op: SectionOp
    cited: dict[str, Seqs]
    outside: Seqs


def read_references(op: SectionOp, allowed: SeqRange) -> ReadOp:
    """Strip the trailing reference of every line of an UPDATE and every APPEND item."""
    cited: dict[str, Seqs] = {}
    outside: set[int] = set()

    def read(text: str) -> str:
        found = cite(text, allowed)
        outside.update(found.outside)
        key = source_key(found.text)
        if key and found.seqs:
            cited[key] = normalised_seqs([*cited.get(key, ()), *found.seqs])
        return found.text

    if op.kind is OpKind.UPDATE:
        lines = []
        for line in op.content.splitlines():
            if line.strip() and not is_heading(line):
                line = read(line)
                if not strip_bullet(line):
                    continue
            lines.append(line)
        op = update("\n".join(lines))
    elif op.kind is OpKind.APPEND:
        op = append([text for text in (read(item) for item in op.items) if text.strip()])
    return ReadOp(op, cited, tuple(sorted(outside)))


def attribute(
    body: str,
    cited: Mapping[str, Seqs],
    prior: Sequence[ItemSource],
    roles: Mapping[int, tuple[str, ...]] | None = None,
    *,
    reuse: Reuse | None = None,
) -> SectionSources:
    """The sources of every item of ``body``: what was cited for it, what the same item had in
    the prior, and the sources of every prior item it absorbed: an UPDATE that merges items
    keeps the union of their sources.

    A prior item the body no longer holds was absorbed by each item that contains its first 40
    characters (a packed line), and — when the body's items together keep at least half of its
    lexical anchors (a digest of names, dates and amounts, which may spread them over lines) —
    by each item that keeps one of them.

    Its authority: the roles (``roles``, this archive's messages) of its seqs, and the authority
    of every prior item it stands for.
    """
    items = split_items(body)
    keys = [source_key(item) for item in items]
    shared = for_roles(reuse, roles or {})
    if (
        shared.attributed(body) is prior
        and len(set(keys)) == len(keys)
        and not any(key in cited for key in keys)
    ):
        # The sources this archive gave the same body, as they were, and nothing new cited:
        # every item already has its own sources, its seqs' roles, and no prior item is lost.
        return tuple(prior)
    entries: dict[str, list[ItemSource]] = {}
    for entry in prior:
        entries.setdefault(source_key(entry.item), []).append(entry)
    present = set(keys)
    gone = [entry for entry in prior if entry.seqs and source_key(entry.item) not in present]
    absorbed: dict[int, list[ItemSource]] = {}
    for index, entry in absorbing(items, gone):
        absorbed.setdefault(index, []).append(entry)
    found_sources: list[ItemSource] = []
    for index, (item, key) in enumerate(zip(items, keys, strict=True)):
        same = entries.get(key, [])
        if len(same) == 1 and index not in absorbed and key not in cited and shared.made(same[0]):
            # Its one prior entry, made by this archive's attribution: its own sources and
            # their roles, and nothing new.
            entry = same[0]
            found_sources.append(entry if entry.item == item else replace(entry, item=item))
            continue
        # Seqs are cut to the newest ``MAX_SEQS_PER_ITEM`` once, at the end: the newest of a
        # union are the newest of the union of its parts' newest.
        found: set[int] = set(cited.get(key, ()))
        who: set[str] = set()
        for entry in (*same, *absorbed.get(index, ())):
            found.update(entry.seqs)
            who.update(entry.authority)
        kept = normalised_seqs(found)
        who.update(shared.who(kept))
        found_sources.append(ItemSource(item, kept, authority=authority_of(who)))
    attributed = tuple(found_sources)
    shared.keep_attributed(body, attributed)
    return attributed


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


def mark_tool_output(body: str, sources: SectionSources) -> tuple[str, SectionSources]:
    """Key Facts as a reader should weigh them: an item whose only known source is a tool result
    says so (``[from a tool result] …``), so the context never presents it as the user's word."""
    lines: list[str] = []
    kept: list[ItemSource] = []
    index = 0
    for line in body.splitlines():
        item = strip_bullet(line)
        if not line.strip() or is_heading(line) or not item:
            lines.append(line)
            continue
        entry = sources[index]
        index += 1
        if entry.authority == ("tool",) and Marker.TOOL_OUTPUT not in markers_of(item):
            item = with_marker(Marker.TOOL_OUTPUT, item)
            line = f"- {item}"
            entry = replace(entry, item=item)
        lines.append(line)
        kept.append(entry)
    return "\n".join(lines), tuple(kept)


def cited_markdown(
    bodies: Mapping[Section, str], sources: Mapping[Section, SectionSources]
) -> dict[Section, str]:
    """Section bodies with every sourced item's reference written after it, for a prompt: the
    model sees where each item came from and can keep the references when it rewrites."""
    cited: dict[Section, str] = {}
    for section in SECTIONS:
        by_key = {source_key(s.item): s.seqs for s in sources.get(section, ())}
        lines = []
        for line in bodies.get(section, "").splitlines():
            item = strip_bullet(line)
            seqs = by_key.get(source_key(item), ()) if item and not is_heading(line) else ()
            lines.append(with_reference(line, seqs))
        cited[section] = "\n".join(lines)
    return cited
