"""Archives brought in from another store: what one carries and the section rows it becomes.

``ArchiveService.store_imported`` writes them; this module only shapes the values.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from app.archives.records import SectionVersionRow
from app.models import ArchiveStatus
from app.wm.items import split_items
from app.wm.sections import SECTIONS, ParsedDocument
from app.wm.tokens import count_tokens

IMPORT_GENERATOR = "import"
"""The generator recorded on archives and section rows brought in from another store (the
same value the legacy-upgrading migration writes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportedArchive:
    """An archive brought in from another store, with the range and state it had there.

    ``document`` (the seven sections) becomes seven section rows with ``op_applied = IMPORT``;
    ``legacy_overview`` (free text) is kept for the next commit to upgrade (DESIGN 6.3); with
    neither, the archive has no working memory. ``tail_end_seq`` ends the preserved tail its
    commit kept live (``None``: it kept none).
    """

    start_seq: int
    end_seq: int
    tail_end_seq: int | None
    status: ArchiveStatus
    keep_recent_count: int | None
    created_at: datetime | None
    finished_at: datetime | None = None
    error_stage: str | None = None
    last_error: str | None = None
    document: ParsedDocument | None = None
    legacy_overview: str | None = None
    abstract: str | None = None
    note: str | None = None


def imported_section_rows(
    agent_session_id: uuid.UUID,
    archive_seq: int,
    document: ParsedDocument,
    created_at: datetime | None,
) -> list[SectionVersionRow]:
    """Seven ``IMPORT`` rows; text outside the seven sections rides in the first row's
    ``details``, as the legacy-upgrading migration keeps it."""
    kept_aside = {
        "preamble": document.preamble,
        "extra": [{"heading": extra.heading, "body": extra.body} for extra in document.extra],
    }
    return [
        SectionVersionRow(
            agent_session_id=agent_session_id,
            archive_seq=archive_seq,
            section=section,
            position=position,
            content=document.sections[section],
            token_count=count_tokens(document.sections[section]),
            item_count=len(split_items(document.sections[section])),
            op_requested=None,
            op_applied="IMPORT",
            guard=None,
            reason="imported",
            details=kept_aside if position == 1 else {},
            generator=IMPORT_GENERATOR,
            created_at=created_at,
        )
        for position, section in enumerate(SECTIONS, start=1)
    ]
