"""SQL of retention: a tenant's policy, and the purges of raw messages and idle agent sessions.

Every statement is scoped to the repository's tenant (row-level security backs it up) and takes
its cut-off from Postgres's ``now()``, so tests move the clock by moving the rows' timestamps.
Each purge takes at most ``batch`` rows, skips rows another transaction holds (``SKIP LOCKED``)
and states its condition again in the statement that deletes, so a row that changed meanwhile
stays. Flushes, never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import RetentionPolicy


@dataclass(frozen=True, slots=True)
class PolicyRow:
    archive_messages_days: int | None
    idle_session_days: int | None
    memory_days: dict[str, int]
    updated_by: uuid.UUID | None
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class PurgedArchive:
    agent_session_id: uuid.UUID
    archive_seq: int
    message_count: int


# The tenant's oldest finished archives whose raw messages are kept and older than the limit;
# their messages deleted, the stored-bytes counter of their agent sessions lowered by what the
# append had counted for them, and each archive marked with when and how many. A failed or
# unfinished archive keeps its messages: its retry (or the next archive) still reads them.
# Retractions and redactions of the messages go with them (their foreign keys cascade), and so
# do the messages' history-search words (an index over the rows' own column).
_PURGE_ARCHIVE_MESSAGES = text(
    """
WITH due AS (
    SELECT a.agent_session_id, a.archive_seq, a.start_seq, a.end_seq
      FROM archives a
     WHERE a.tenant_id = :tenant_id AND a.messages_purged_at IS NULL AND a.status = 'done'
       AND a.created_at < now() - make_interval(days => :days)
     ORDER BY a.created_at, a.agent_session_id, a.archive_seq
     LIMIT :batch
       FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM messages m
     USING due
     WHERE m.tenant_id = :tenant_id AND m.agent_session_id = due.agent_session_id
       AND m.seq BETWEEN due.start_seq AND due.end_seq
    RETURNING due.agent_session_id, due.archive_seq,
              octet_length(m.message::text) + coalesce(octet_length(m.metadata::text), 0) AS bytes
), counted AS (
    SELECT due.agent_session_id, due.archive_seq, count(gone.bytes)::integer AS message_count,
           coalesce(sum(gone.bytes), 0)::bigint AS bytes
      FROM due
      LEFT JOIN gone USING (agent_session_id, archive_seq)
     GROUP BY due.agent_session_id, due.archive_seq
), sessions AS (
    UPDATE agent_sessions s
       SET stored_bytes = greatest(0, s.stored_bytes - freed.bytes)
      FROM (SELECT agent_session_id, sum(bytes) AS bytes FROM counted GROUP BY agent_session_id)
           AS freed
     WHERE s.tenant_id = :tenant_id AND s.agent_session_id = freed.agent_session_id
)
UPDATE archives a
   SET messages_purged_at = now(), messages_purged_count = counted.message_count
  FROM counted
 WHERE a.tenant_id = :tenant_id AND a.agent_session_id = counted.agent_session_id
   AND a.archive_seq = counted.archive_seq
RETURNING a.agent_session_id, a.archive_seq, a.messages_purged_count
"""
)

# Agent sessions with no append or commit (both set ``updated_at``) within the limit, oldest
# first, locked: an append or commit waits on that lock (each locks the row first) until this
# transaction ends, and one that committed meanwhile makes the row fail the re-checked condition.
_LOCK_IDLE_SESSIONS = text(
    """
SELECT s.agent_session_id
  FROM agent_sessions s
 WHERE s.tenant_id = :tenant_id
   AND s.created_at < now() - make_interval(days => :days)
   AND s.updated_at < now() - make_interval(days => :days)
   -- An agent session whose history a fork shares stays until its forks are gone.
   AND NOT EXISTS (SELECT 1 FROM agent_sessions f
                    WHERE f.tenant_id = s.tenant_id AND f.parent_session_id = s.agent_session_id)
   AND NOT EXISTS (SELECT 1 FROM agent_session_lineage l
                    WHERE l.tenant_id = s.tenant_id AND l.ancestor_session_id = s.agent_session_id)
 ORDER BY s.updated_at, s.agent_session_id
 LIMIT :batch
   FOR UPDATE SKIP LOCKED
"""
)

_DELETE_IDLE_SESSIONS = text(
    """
DELETE FROM agent_sessions s
 WHERE s.tenant_id = :tenant_id AND s.agent_session_id = ANY(:ids)
   AND s.updated_at < now() - make_interval(days => :days)
RETURNING s.agent_session_id
"""
)


class RetentionRepository:
    def __init__(self, db: AsyncSession, tenant_id: uuid.UUID) -> None:
        self.db = db
        self.tenant_id = tenant_id

    async def policy(self) -> PolicyRow | None:
        row = (
            await self.db.execute(
                select(
                    RetentionPolicy.archive_messages_days,
                    RetentionPolicy.idle_session_days,
                    RetentionPolicy.memory_days,
                    RetentionPolicy.updated_by,
                    RetentionPolicy.updated_at,
                ).where(RetentionPolicy.tenant_id == self.tenant_id)
            )
        ).first()
        return None if row is None else PolicyRow(*row)

    async def put_policy(self, values: dict[str, Any], updated_by: uuid.UUID | None) -> PolicyRow:
        """Replace the tenant's policy (the whole of it, as PUT does)."""
        fields = {**values, "updated_by": updated_by, "updated_at": func.now()}
        row = (
            await self.db.execute(
                pg_insert(RetentionPolicy)
                .values(tenant_id=self.tenant_id, **fields)
                .on_conflict_do_update(index_elements=[RetentionPolicy.tenant_id], set_=fields)
                .returning(
                    RetentionPolicy.archive_messages_days,
                    RetentionPolicy.idle_session_days,
                    RetentionPolicy.memory_days,
                    RetentionPolicy.updated_by,
                    RetentionPolicy.updated_at,
                )
            )
        ).one()
        return PolicyRow(*row)

    async def purge_archive_messages(self, *, days: int, batch: int) -> list[PurgedArchive]:
        rows = await self.db.execute(
            _PURGE_ARCHIVE_MESSAGES, {"tenant_id": self.tenant_id, "days": days, "batch": batch}
        )
        return [PurgedArchive(*row) for row in rows.all()]

    async def lock_idle_sessions(self, *, days: int, batch: int) -> list[uuid.UUID]:
        rows = await self.db.execute(
            _LOCK_IDLE_SESSIONS, {"tenant_id": self.tenant_id, "days": days, "batch": batch}
        )
        return list(rows.scalars())

    async def delete_idle_sessions(
        self, agent_session_ids: Sequence[uuid.UUID], *, days: int
    ) -> list[uuid.UUID]:
        rows = await self.db.execute(
            _DELETE_IDLE_SESSIONS,
            {"tenant_id": self.tenant_id, "ids": list(agent_session_ids), "days": days},
        )
        return list(rows.scalars())
