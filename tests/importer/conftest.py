"""Helpers for import tests: running an import in process, and reading back what a tenant holds.

``snapshot`` is every imported row of a tenant without what the database generates (ids and the
times of the run itself), so two imports of the same files compare equal.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import text

from app.db import Database
from app.importer.openviking.run import ImportOptions, import_workspace
from app.importer.openviking.summary import SessionOutcome, Summary
from app.sessions.service import Limits


class Recorder:
    """A listener that keeps what it is told."""

    def __init__(self) -> None:
        self.total: int | None = None
        self.outcomes: list[SessionOutcome] = []

    def started(self, total: int) -> None:
        self.total = total

    def finished(self, outcome: SessionOutcome) -> None:
        self.outcomes.append(outcome)


async def run_import(
    database: Database,
    workspace: Path,
    tenant_id: uuid.UUID,
    *,
    limits: Limits | None = None,
    **options: Any,
) -> Summary:
    recorder = Recorder()
    summary = await import_workspace(
        database, ImportOptions(workspace, tenant_id, **options), limits or Limits(), recorder
    )
    assert recorder.total == len(summary.outcomes) == len(recorder.outcomes)
    return summary


_SNAPSHOT = {
    "agent_sessions": """
        SELECT external_id, user_id, agent_id, metadata, keep_recent_count, last_seq,
               archived_upto_seq, turn_count, pending_tokens, total_tokens, archived_tokens,
               archive_count, created_at
        FROM agent_sessions ORDER BY external_id""",
    "messages": """
        SELECT s.external_id, m.seq, m.role, m.turn, m.message, m.token_count, m.content_text,
               m.metadata, m.created_at
        FROM messages m JOIN agent_sessions s USING (tenant_id, agent_session_id)
        ORDER BY s.external_id, m.seq""",
    "archives": """
        SELECT s.external_id, a.archive_seq, a.start_seq, a.end_seq, a.overview, a.abstract,
               a.created_at, a.status, a.attempt, a.last_error, a.error_stage, a.generator,
               a.generator_note, a.model, a.prompt_version, a.usage, a.covers_failed_archives,
               a.legacy_overview, a.is_legacy, a.upgraded_from_legacy, a.keep_recent_count,
               a.first_turn, a.last_turn, a.tail_start_seq, a.tail_end_seq,
               a.tail_message_count, a.tail_tokens, a.archived_tokens, a.wm_tokens, a.finished_at
        FROM archives a JOIN agent_sessions s USING (tenant_id, agent_session_id)
        ORDER BY s.external_id, a.archive_seq""",
    "wm_section_versions": """
        SELECT s.external_id, v.archive_seq, v.section::text, v.position, v.content,
               v.content_sha256, v.token_count, v.item_count, v.op_requested, v.op_applied,
               v.guard, v.reason, v.details, v.generator, v.model, v.prompt_version, v.created_at
        FROM wm_section_versions v JOIN agent_sessions s USING (tenant_id, agent_session_id)
        ORDER BY s.external_id, v.archive_seq, v.position""",
}


async def snapshot(database: Database, tenant_id: uuid.UUID) -> dict[str, list[tuple[Any, ...]]]:
    async with database.tenant(tenant_id) as db:
        return {
            table: [tuple(row) for row in (await db.execute(text(query))).all()]
            for table, query in _SNAPSHOT.items()
        }


_COUNTS = text(
    "SELECT (SELECT count(*) FROM agent_sessions), (SELECT count(*) FROM messages),"
    " (SELECT count(*) FROM archives), (SELECT count(*) FROM wm_section_versions)"
)


async def row_counts(admin_database: Database) -> dict[str, int]:
    """Rows of every table an import writes, over all tenants (read by the schema owner)."""
    async with admin_database.unscoped() as db:
        counts = (await db.execute(_COUNTS)).one()
    return dict(zip(_SNAPSHOT, (int(count) for count in counts), strict=True))
