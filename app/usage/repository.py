"""SQL of ``model_calls``: writing a batch of one tenant's rows, and the report by day and model.

Every statement names its tenant; row-level security applies as everywhere.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.usage.records import ModelCallRecord

# An agent session deleted since the call leaves the row without one (the join finds none).
_INSERT = text(
    """
    INSERT INTO model_calls (tenant_id, agent_session_id, archive_seq, purpose, model,
                             input_tokens, output_tokens, latency_ms, outcome, created_at)
    SELECT :tenant_id, s.agent_session_id, r.archive_seq, r.purpose, r.model,
           r.input_tokens, r.output_tokens, r.latency_ms, r.outcome, r.created_at
    FROM unnest(CAST(:sessions AS uuid[]), CAST(:seqs AS integer[]), CAST(:purposes AS text[]),
                CAST(:models AS text[]), CAST(:inputs AS integer[]), CAST(:outputs AS integer[]),
                CAST(:latencies AS integer[]), CAST(:outcomes AS text[]),
                CAST(:ats AS timestamptz[]))
         AS r(agent_session_id, archive_seq, purpose, model, input_tokens, output_tokens,
              latency_ms, outcome, created_at)
    LEFT JOIN agent_sessions s
           ON s.tenant_id = :tenant_id AND s.agent_session_id = r.agent_session_id
    """
)

_BY_DAY = text(
    """
    SELECT (created_at AT TIME ZONE 'UTC')::date AS day, model,
           count(*) AS calls,
           count(*) FILTER (WHERE outcome = 'error') AS errors,
           count(*) FILTER (WHERE outcome = 'refused') AS refused,
           coalesce(sum(input_tokens), 0) AS input_tokens,
           coalesce(sum(output_tokens), 0) AS output_tokens,
           coalesce(sum(latency_ms), 0) AS latency_ms
    FROM model_calls
    WHERE tenant_id = :tenant_id AND created_at >= :start AND created_at < :end
    GROUP BY 1, 2
    ORDER BY 1, 2
    """
)


@dataclass(frozen=True, slots=True)
class DayModel:
    """One model's calls on one UTC day."""

    day: date
    model: str
    calls: int
    errors: int
    refused: int
    input_tokens: int
    output_tokens: int
    latency_ms: int


async def insert_calls(
    db: AsyncSession, tenant_id: uuid.UUID, calls: Sequence[ModelCallRecord]
) -> None:
    await db.execute(
        _INSERT,
        {
            "tenant_id": tenant_id,
            "sessions": [call.scope.agent_session_id for call in calls],
            "seqs": [call.scope.archive_seq for call in calls],
            "purposes": [call.purpose for call in calls],
            "models": [call.model for call in calls],
            "inputs": [call.input_tokens for call in calls],
            "outputs": [call.output_tokens for call in calls],
            "latencies": [call.latency_ms for call in calls],
            "outcomes": [call.outcome for call in calls],
            "ats": [call.at for call in calls],
        },
    )


async def by_day_and_model(
    db: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime
) -> list[DayModel]:
    rows = await db.execute(_BY_DAY, {"tenant_id": tenant_id, "start": start, "end": end})
    return [
        DayModel(
            day=row.day,
            model=row.model,
            calls=row.calls,
            errors=row.errors,
            refused=row.refused,
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            latency_ms=row.latency_ms,
        )
        for row in rows
    ]
