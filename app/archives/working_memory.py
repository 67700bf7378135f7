"""The working memory of an agent session after one done archive: the one value for "the WM".

Loaded by ``ArchiveRepository.working_memory`` and used as it is by the archive job (the prior
the next archive starts from), by context assembly (the summary) and by the API (endpoints map it
to ``WorkingMemoryRead``). Pure data plus what follows from it; never loads or stores anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.wm.provenance import SectionSources, sources_from_json
from app.wm.sections import Section, empty_sections, render


@dataclass(frozen=True, slots=True)
class RecordedDecision:
    """A guard decision as stored with a section version.

    Plain strings, not the merge's enums: stored history also holds values no merge produces
    (``IMPORT`` for imported documents) and must stay readable after codes are added.
    """

    section: Section
    requested: str | None
    applied: str
    guard: str | None
    reason: str
    details: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class WorkingMemory:
    """The seven sections after archive ``archive_seq``, which cover messages
    ``1..covered_end_seq``; or, for an archive imported or migrated from a free-text overview,
    that ``legacy_text`` (sections all empty until the next archive upgrades it).

    ``archive_seq`` 0 is the empty working memory of an agent session with no done archive.
    ``decisions`` are loaded only where asked for; ``sources`` (each item's message seqs) where
    they are read.
    """

    archive_seq: int
    covered_end_seq: int
    sections: Mapping[Section, str]
    legacy_text: str | None = None
    generator: str | None = None
    tokens: int = 0
    decisions: tuple[RecordedDecision, ...] = ()
    sources: Mapping[Section, SectionSources] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> WorkingMemory:
        return cls(archive_seq=0, covered_end_seq=0, sections=empty_sections())

    @property
    def covered_start_seq(self) -> int:
        return 1 if self.archive_seq else 0

    @property
    def is_legacy(self) -> bool:
        return self.legacy_text is not None

    @property
    def is_empty(self) -> bool:
        """Nothing to start from: no legacy text and every section empty."""
        return self.legacy_text is None and not any(self.sections.values())

    @property
    def markdown(self) -> str:
        if self.legacy_text is not None:
            return self.legacy_text
        return render(self.sections)


def decision_of(row: Any) -> RecordedDecision:
    """The decision stored in a section-version row (``section``, ``op_requested``,
    ``op_applied``, ``guard``, ``reason``, ``details``)."""
    return RecordedDecision(
        section=Section(row.section),
        requested=row.op_requested,
        applied=row.op_applied,
        guard=row.guard,
        reason=row.reason,
        details=row.details,
    )


def working_memory_of(rows: Sequence[Any], *, with_decisions: bool) -> WorkingMemory:
    """The working memory of one done archive from its section-version rows, in position order
    (each with the archive's ``archive_seq``, ``end_seq``, ``generator``, ``wm_tokens`` and
    ``legacy_text``); one row with no section is a free-text overview, imported or migrated,
    not upgraded yet."""
    first = rows[0]
    if first.section is None:
        return WorkingMemory(
            archive_seq=first.archive_seq,
            covered_end_seq=first.end_seq,
            sections=empty_sections(),
            legacy_text=first.legacy_text or "",
            generator=first.generator,
            tokens=first.wm_tokens or 0,
        )
    sections = empty_sections()
    sources: dict[Section, SectionSources] = {}
    for row in rows:
        sections[Section(row.section)] = row.content
        sources[Section(row.section)] = sources_from_json(row.sources)
    return WorkingMemory(
        archive_seq=first.archive_seq,
        covered_end_seq=first.end_seq,
        sections=sections,
        generator=first.generator,
        tokens=sum(row.token_count for row in rows),
        decisions=tuple(decision_of(row) for row in rows) if with_decisions else (),
        sources=sources,
    )
