"""Agent-session rows as the API's response model: the mapping beside the endpoints, so the
schemas stay leaves."""

from __future__ import annotations

from app.memories.schemas import MemoryPolicyFields
from app.models import AgentSession
from app.sessions.records import NewestArchive
from app.sessions.schemas import AgentSessionRead, ArchiveBrief, LineageRead


def agent_session_read(row: AgentSession, newest: NewestArchive | None = None) -> AgentSessionRead:
    brief = None
    if newest is not None:
        brief = ArchiveBrief(
            archive_seq=newest.archive_seq,
            start_seq=newest.start_seq,
            end_seq=newest.end_seq,
            status=newest.status,
        )
    policy = row.memory_policy
    return AgentSessionRead(
        id=row.agent_session_id,
        external_id=row.external_id,
        user_id=row.user_id,
        agent_id=row.agent_id,
        metadata=row.metadata_,
        keep_recent_count=row.keep_recent_count,
        memory_policy=None if policy is None else MemoryPolicyFields.of(policy),
        record_contexts=row.record_contexts,
        message_count=row.last_seq,
        live_message_count=row.last_seq - row.archived_upto_seq,
        pending_tokens=row.pending_tokens,
        total_tokens=row.total_tokens,
        archive_count=row.archive_count,
        newest_archive=brief,
        lineage=None
        if row.parent_session_id is None
        else LineageRead(
            parent_session_id=row.parent_session_id,
            archive_seq=row.forked_at_archive_seq or 0,
            seq=row.forked_at_seq or 0,
        ),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
