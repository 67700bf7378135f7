"""Provenance of working-memory items: which messages each item came from, through every merge.

Owns the per-item sources stored with a section version: read from a model's trailing
references (``references``) or given by the offline extractor, carried over from the prior for
an item that stays, and united when an UPDATE folds prior items into one. Owns the unsourced
constraint rule too: a new Task & Goals constraint whose sources name no user message stating a
constraint is marked ``[unsourced]``. Pure; never loads messages and never applies an op.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from app.wm.anchors import anchors
from app.wm.guards import is_constraint, states_constraint
from app.wm.items import (
    Marker,
    is_heading,
    is_kept,
    normalise,
    split_items,
    strip_bullet,
    strip_markers,
    with_marker,
)
from app.wm.messages import read_messages
from app.wm.ops import OpKind, SectionOp, append, update
from app.wm.references import SeqRange, Seqs, cite, normalised_seqs, with_reference
from app.wm.sections import SECTIONS, Section

_LIST_LIMIT: Final = 50
_INSTRUCTING: Final = frozenset({"user", "system"})
"""Who may give a constraint: the user, and the operator in a system message (an agent's own
policy); an assistant or a tool result never does."""


def source_key(item: str) -> str:
    """What identifies an item across versions: its text without bullet and markers, normalised
    (``[resolved] X`` is still ``X``, whose sources it keeps)."""
    return normalise(strip_markers(item))


@dataclass(frozen=True, slots=True)
class ItemSource:
    """One item of a section body and the seqs of the messages it came from.

    ``evidence`` (Task & Goals constraints only) is the part of ``seqs`` that are user messages
    stating a constraint: what makes the constraint the user's rather than the model's.
    """

    item: str
    seqs: Seqs = ()
    evidence: Seqs = ()

    def as_json(self) -> dict[str, object]:
        value: dict[str, object] = {"item": self.item, "seqs": list(self.seqs)}
        if self.evidence:
            value["evidence"] = list(self.evidence)
        return value


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
            ItemSource(entry["item"], _seqs_of(entry.get("seqs")), _seqs_of(entry.get("evidence")))
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
    archive that state a constraint, by seq, their text normalised.
    """

    allowed: SeqRange
    prior: Mapping[Section, SectionSources] = field(default_factory=dict)
    cited: Mapping[str, Seqs] | None = None
    evidence: Mapping[int, str] = field(default_factory=dict)


def constraint_evidence(messages: Sequence[Mapping[str, object]], first_seq: int) -> dict[int, str]:
    """The user and system messages (numbered from ``first_seq``) whose text has a constraint
    keyword of guard C: seq → the text, normalised (what a quoting item is compared with)."""
    return {
        first_seq + view.position: normalise(view.text)
        for view in read_messages(messages)
        if view.role in _INSTRUCTING and states_constraint(view.text)
    }


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


def attribute(body: str, cited: Mapping[str, Seqs], prior: Sequence[ItemSource]) -> SectionSources:
    """The sources of every item of ``body``: what was cited for it, what the same item had in
    the prior, and the sources of every prior item it absorbed: an UPDATE that merges items
    keeps the union of their sources.

    A prior item the body no longer holds was absorbed by each item that contains its first 40
    characters (a packed line), and — when the body's items together keep at least half of its
    lexical anchors (a digest of names, dates and amounts, which may spread them over lines) —
    by each item that keeps one of them.
    """
    items = split_items(body)
    keys = [source_key(item) for item in items]
    by_key: dict[str, Seqs] = {}
    for entry in prior:
        key = source_key(entry.item)
        by_key[key] = normalised_seqs([*by_key.get(key, ()), *entry.seqs])
    seqs: list[set[int]] = [{*cited.get(key, ()), *by_key.get(key, ())} for key in keys]
    present = set(keys)
    gone = [entry for entry in prior if entry.seqs and source_key(entry.item) not in present]
    if gone:
        lowered = [item.lower() for item in items]
        item_anchors = [anchors(item) for item in items]
        for entry in gone:
            wanted = anchors(entry.item)
            held = [wanted & found for found in item_anchors]
            spread = len(set().union(*held)) * 2 >= len(wanted) > 0
            for index, item in enumerate(lowered):
                if is_kept(entry.item, item) or (spread and held[index]):
                    seqs[index].update(entry.seqs)
    return tuple(
        ItemSource(item, normalised_seqs(found)) for item, found in zip(items, seqs, strict=True)
    )


@dataclass(frozen=True, slots=True)
class Unsourced:
    """Task & Goals after the unsourced-constraint rule: the body, its sources, and the items
    it marked."""

    body: str
    sources: SectionSources
    marked: list[str]


_QUOTE_MIN_WORDS: Final = 3
"""A constraint quotes a message word for word when its text of at least this many words is in
the message's."""


def mark_unsourced(
    body: str,
    sources: SectionSources,
    prior_body: str,
    prior: Sequence[ItemSource],
    evidence: Mapping[int, str],
) -> Unsourced:
    """Mark every constraint of ``body`` that is not a constraint of the prior and that no
    user message stating a constraint gave: neither do its sources name one (of ``evidence``,
    or the evidence of the prior's constraints), nor does it quote one word for word (three
    words or more; a model that forgot its references is not taken for one that invented).
    A constraint carried from the prior is never marked: guard C keeps it as it was."""
    protected = {source_key(item) for item in split_items(prior_body) if is_constraint(item)}
    pool = set(evidence).union(*(entry.evidence for entry in prior))
    lines: list[str] = []
    kept: list[ItemSource] = []
    marked: list[str] = []
    index = 0
    for line in body.splitlines():
        item = strip_bullet(line)
        if not line.strip() or is_heading(line) or not item:
            lines.append(line)
            continue
        entry = sources[index]
        index += 1
        if not is_constraint(item):
            lines.append(line)
            kept.append(entry)
            continue
        key = source_key(item)
        quotable = len(key.split()) >= _QUOTE_MIN_WORDS
        quoted = [seq for seq, text in evidence.items() if quotable and key in text]
        found = normalised_seqs([*(seq for seq in entry.seqs if seq in pool), *quoted])
        if found or key in protected:
            lines.append(line)
            kept.append(ItemSource(entry.item, normalised_seqs([*entry.seqs, *found]), found))
            continue
        item = with_marker(Marker.UNSOURCED, item)
        lines.append(f"- {item}")
        kept.append(ItemSource(item, entry.seqs))
        marked.append(item)
    return Unsourced("\n".join(lines), tuple(kept), marked[:_LIST_LIMIT])


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
