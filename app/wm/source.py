"""Guards against the source: what the offline extractor kept of the same messages, restored.

Owns the shadow prior. A model's proposal is checked against the prior version by guards A-F,
but a creation has no prior, and an update can leave out what the archived messages said that
the prior never held. The offline extractor's working memory of the same messages, built from
the same prior, is the record of what those messages hold that must not be lost: the user's
constraints (Task & Goals), file paths (Files & Context), error lines (Errors & Corrections),
open questions and TODOs (Open Issues) and dated facts (Key Facts). Whatever of those the merged
section lacks is added back, each restoration a decision with reason ``source_restored``. Pure;
the shadow is computed by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from app.wm.anchors import anchor_spans
from app.wm.authority import authority_of
from app.wm.guards import GuardContext, is_constraint, key_facts_append, without_sentinel
from app.wm.items import Marker, is_kept, markers_of, split_items, strip_markers, with_marker
from app.wm.paths import find_paths
from app.wm.provenance import ItemSource, Provenance, source_key
from app.wm.reasons import Reason
from app.wm.sections import Section
from app.wm.support import content_words, overlap, same_claim

UNTRUSTED: Final = frozenset(
    {Marker.UNSOURCED, Marker.CONTRADICTS, Marker.CONFLICTING, Marker.TOOL_SOURCED}
)
"""Markers of the trust rules: an item under one is not the user's."""
_CLOSED: Final = frozenset({Marker.RESOLVED, Marker.DONE, Marker.LIFTED})
"""Open items not watched: closed ones."""
_LIST_LIMIT: Final = 50
_GOAL: Final = "Goal:"


@dataclass(frozen=True, slots=True)
class Shadow:
    """The offline extractor's working memory of the messages a model was given (the shadow
    prior): its section bodies, and the seqs each of its items came from by ``source_key``."""

    sections: Mapping[Section, str]
    cited: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    refused: frozenset[str] = frozenset()
    """Items (by ``source_key``) the trust rules marked in the prior: the extractor carries
    them like any item, but the shadow never gives one back as the user's."""


Same = Callable[[str, str], bool]


PARAPHRASE_MIN_OVERLAP: Final = 0.8
"""An error line or open item is kept by another item holding at least 80 % of its content
words: two errors of the same call share most of their words, and each must stay."""


PARAPHRASE_MIN_WORDS: Final = 3
"""An item of fewer content words is kept by its first 40 characters only ("Question from Ann:
How about you?" has two, which every question of Ann's shares)."""


def _worded(item: str, other: str) -> bool:
    return (
        len(content_words(item)) >= PARAPHRASE_MIN_WORDS
        and overlap(item, [other]) >= PARAPHRASE_MIN_OVERLAP
    )


def _missing(body: str, watched: list[str], marker: Marker | None, same: Same) -> list[str]:
    """The watched items the body does not keep. An item is kept by a body item holding its
    snippet, or else by one that says the same thing; each body item keeps one watched item
    only, exact holders first (two users' "no travel insurance" are two constraints, and one
    kept line must not stand in for both)."""
    items = split_items(body)
    used: set[int] = set()
    unheld: list[str] = []
    for item in watched:
        holder = next(
            (i for i, other in enumerate(items) if i not in used and is_kept(item, other.lower())),
            None,
        )
        if holder is None:
            unheld.append(item)
        else:
            used.add(holder)
    restored: list[str] = []
    for item in unheld:
        text = strip_markers(item)
        holder = next(
            (
                i
                for i, other in enumerate(items)
                if i not in used and same(text, strip_markers(other))
            ),
            None,
        )
        if holder is None:
            restored.append(item if marker is None else with_marker(marker, item))
        else:
            used.add(holder)
    return restored


def _task(body: str, shadow: str, ctx: GuardContext, source: Shadow) -> list[str]:
    """The shadow's constraints the body lacks. A ``Goal: …`` line is the task, not a
    constraint, even when it repeats one: the user's sentence is watched on its own line."""
    watched = [
        item
        for item in split_items(shadow)
        if is_constraint(item)
        and not strip_markers(item).startswith(_GOAL)
        and source_key(item) not in source.refused
    ]
    return _missing(body, watched, Marker.KEPT_CONSTRAINT, same_claim)


def _files(body: str, shadow: str, ctx: GuardContext, source: Shadow) -> list[str]:
    have = set(find_paths(body))
    restored: list[str] = []
    for item in split_items(shadow):
        lost = [path for path in find_paths(item) if path not in have]
        if lost:
            restored.append(item)
            have.update(find_paths(item))
    return restored


def _errors(body: str, shadow: str, ctx: GuardContext, source: Shadow) -> list[str]:
    return _missing(body, split_items(shadow), None, _worded)


def _open_issues(body: str, shadow: str, ctx: GuardContext, source: Shadow) -> list[str]:
    """The shadow's open items the body lacks. One guard F gave back once already comes back
    again only when messages raised it (it has sources): an item no message gave keeps guard F's
    once-only rule."""
    watched = [
        item
        for item in split_items(shadow)
        if not markers_of(item) & _CLOSED
        and (Marker.RESTORED not in markers_of(item) or source.cited.get(source_key(item)))
    ]
    return _missing(body, watched, Marker.RESTORED, _worded)


def _dates(text: str) -> set[str]:
    return {span.key for span in anchor_spans(text) if span.kind == "date"}


def _key_facts(body: str, shadow: str, ctx: GuardContext, source: Shadow) -> list[str]:
    have = _dates(body)
    wanted: list[str] = []
    for item in split_items(without_sentinel(shadow)):
        dates = _dates(item)
        if dates - have:
            wanted.append(item)
            have |= dates
    if not wanted:
        return []
    verdict = key_facts_append(body, wanted, ctx)
    if verdict.reason is Reason.EMERGENCY_SENTINEL:
        return []
    return list(verdict.op.items)


SourceRule = Callable[[str, str, GuardContext, "Shadow"], list[str]]

SOURCE_RULES: Final[dict[Section, SourceRule]] = {
    Section.TASK_AND_GOALS: _task,
    Section.KEY_FACTS: _key_facts,
    Section.FILES: _files,
    Section.ERRORS: _errors,
    Section.OPEN_ISSUES: _open_issues,
}


def refused_items(task: str) -> frozenset[str]:
    """The ``source_key`` of every Task & Goals item a trust rule marked."""
    return frozenset(source_key(item) for item in split_items(task) if markers_of(item) & UNTRUSTED)


def restore_trusted(body: str, shadow: Shadow, ctx: GuardContext) -> list[str]:
    """The shadow's constraints that Task & Goals lacks once its items the trust rules marked
    are left aside (a user's constraint cited to the wrong message is marked, and must not stand
    in for the user's)."""
    trusted = "\n".join(line for line in body.splitlines() if not markers_of(line) & UNTRUSTED)
    return restore_from_source(Section.TASK_AND_GOALS, trusted, shadow, ctx)


def shadow_sources(
    restored: list[str], shadow: Shadow, provenance: Provenance | None
) -> tuple[ItemSource, ...]:
    """Sources of restored items: the shadow's seqs, the user messages among them stating a
    constraint as evidence, and who those messages are."""
    evidence = provenance.evidence if provenance is not None else {}
    roles = provenance.roles if provenance is not None else {}
    found: list[ItemSource] = []
    for item in restored:
        seqs = shadow.cited.get(source_key(item), ())
        found.append(
            ItemSource(
                item,
                seqs,
                tuple(seq for seq in seqs if seq in evidence),
                authority_of({role for seq in seqs for role in roles.get(seq, ())}),
            )
        )
    return tuple(found)


def restore_from_source(
    section: Section, body: str, shadow: Shadow, ctx: GuardContext
) -> list[str]:
    """The items of the shadow's section that ``body`` lacks and must keep, as lines to add
    (at most 50; the shadow is within the extractor's own caps, so these are too)."""
    rule = SOURCE_RULES.get(section)
    shadow_body = shadow.sections.get(section, "").strip()
    if rule is None or not shadow_body:
        return []
    return rule(body, shadow_body, ctx, shadow)[:_LIST_LIMIT]
