"""SQL of a working-memory restore: the unfinished-archive check and the copy of one version's
seven section rows as a new version. Flushes, never commits."""

from __future__ import annotations

import uuid

from sqlalchemy import exists, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Archive, ArchiveStatus
from app.tenancy.principal import Scope

# One statement: version ``source_seq`` (of ``source_session``, the agent session that owns that
# archive) becomes version ``target_seq`` of ``target_session``, each row marked with who
# restored it and whether it differs from the version it replaces.
_COPY = text(
    """
INSERT INTO wm_section_versions (
    tenant_id, agent_session_id, archive_seq, section, position, content, content_sha256,
    token_count, item_count, op_requested, op_applied, guard, reason, details, sources,
    generator, model, prompt_version)
SELECT v.tenant_id, :target_session, :target_seq, v.section, v.position, v.content,
       v.content_sha256, v.token_count, v.item_count, 'RESTORE', 'RESTORE', NULL, 'restored',
       jsonb_build_object(
           'restored_from_archive', :source_seq,
           'replaced_archive', CAST(:replaced_seq AS integer),
           'restored_by_key', CAST(:key_id AS text),
           'changed', v.content_sha256 IS DISTINCT FROM r.content_sha256),
       v.sources, :generator, NULL, NULL
FROM wm_section_versions v
LEFT JOIN wm_section_versions r
       ON r.tenant_id = v.tenant_id AND r.agent_session_id = :replaced_session
      AND r.archive_seq = :replaced_seq AND r.section = v.section
WHERE v.tenant_id = :tenant_id AND v.agent_session_id = :source_session
  AND v.archive_seq = :source_seq
ORDER BY v.position
"""
)


class RestoreRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    async def has_unfinished(self, agent_session_id: uuid.UUID) -> bool:
        """Whether an archive of the agent session is still pending or running."""
        found = await self.db.scalar(
            select(
                exists().where(
                    Archive.tenant_id == self.scope.tenant_id,
                    Archive.agent_session_id == agent_session_id,
                    Archive.status.in_((ArchiveStatus.PENDING, ArchiveStatus.RUNNING)),
                )
            )
        )
        return bool(found)

    async def copy_sections(
        self,
        *,
        source_session: uuid.UUID,
        source_seq: int,
        target_session: uuid.UUID,
        target_seq: int,
        replaced: tuple[uuid.UUID, int] | None,
        key_id: uuid.UUID,
        generator: str,
    ) -> int:
        """Copy the section rows; how many were copied."""
        result = await self.db.execute(
            _COPY,
            {
                "tenant_id": self.scope.tenant_id,
                "source_session": source_session,
                "source_seq": source_seq,
                "target_session": target_session,
                "target_seq": target_seq,
                "replaced_session": None if replaced is None else replaced[0],
                "replaced_seq": None if replaced is None else replaced[1],
                "key_id": key_id,
                "generator": generator,
            },
        )
        return int(getattr(result, "rowcount", 0) or 0)
