"""Provenance of working-memory items: which messages each item came from, through every merge.

Owns the per-item sources stored with a section version: read from a model's trailing
references (``references``) or given by the offline extractor, carried over from the prior for
an item that stays, and united when an UPDATE folds prior items into one. The trust rules that
read those sources (``[unsourced]`` and its kin) are ``trust``'s. Pure; never loads messages
and never applies an op.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from app.wm.absorption import absorbing
from app.wm.authority import authority_of
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
from app.wm.references import SeqRange, Seqs, cite, normalised_seqs, with_reference
from app.wm.reuse import Reuse, for_roles
from app.wm.sections import SECTIONS, Section

_LIST_LIMIT: Final = 50
_NOT_INSTRUCTING: Final = frozenset({"assistant", "tool"})


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
