"""What the archive services return, as the API's response models: the mapping from ORM rows
and service results, beside the endpoints, so the schemas stay leaves."""

from __future__ import annotations

from app.archives.schemas import (
    ArchiveActionRead,
    ArchiveExpanded,
    ArchiveRead,
    DecisionRead,
    SectionHistoryPage,
    SectionVersionRead,
)
from app.archives.service import ExpandedArchive, HistoryPage
from app.memories.schemas import ProducedMemoryRead
from app.models import Archive, WmSectionVersion
from app.sessions.schemas import MessageRead


def archive_read(row: Archive) -> ArchiveRead:
    return ArchiveRead.model_validate(row, from_attributes=True)


def archive_expanded(expanded: ExpandedArchive) -> ArchiveExpanded:
    archive = expanded.archive
    return ArchiveExpanded(
        **archive_read(archive).model_dump(),
        overview=archive.overview,
        legacy_overview=archive.legacy_overview,
        decisions=[DecisionRead.from_recorded(d) for d in expanded.decisions],
        messages=[
            MessageRead.from_stored(m, archived_upto_seq=archive.end_seq) for m in expanded.messages
        ],
        next_after_seq=expanded.next_after_seq,
        messages_note=purged_note(archive),
        produced_memories=[ProducedMemoryRead.from_value(m) for m in expanded.memories],
        actions=[
            ArchiveActionRead.model_validate(action, from_attributes=True)
            for action in expanded.actions
        ],
    )


def purged_note(archive: Archive) -> str | None:
    """What an expansion says in place of raw messages that retention purged."""
    if archive.messages_purged_at is None:
        return None
    return (
        f"the {archive.messages_purged_count or 0} raw messages of this archive were purged by "
        f"the tenant's retention policy at {archive.messages_purged_at.isoformat()}; its "
        "working memory, overview and decisions are kept"
    )


def section_version_read(row: WmSectionVersion) -> SectionVersionRead:
    return SectionVersionRead.model_validate(row, from_attributes=True)


def section_history_page(page: HistoryPage) -> SectionHistoryPage:
    after = page.next_after
    return SectionHistoryPage(
        items=[section_version_read(row) for row in page.items],
        next_after_archive_seq=None if after is None else after[0],
        next_after_position=None if after is None else after[1],
    )
