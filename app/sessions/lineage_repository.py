"""Reading a fork's lineage (``agent_session_lineage``), once per process and agent session.

Every reader of messages and archives asks it which agent sessions hold which parts of a
history; an agent session that is no fork has no rows. A lineage never changes once its agent
session exists (it is written in the transaction that creates the fork), so what was read for
an existing agent session is kept for the life of the process: the read paths pay the lookup
once, not per request. Flushes, never commits; writes only when a fork is made.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

from sqlalchemy import and_, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import AgentSession, AgentSessionLineage
from app.sessions.lineage import Lineage, Segment
from app.tenancy.principal import Scope

KEPT_LINEAGES: Final = 65_536
"""Lineages kept per process (the least recently used go first): a few MB at most."""

_KNOWN: OrderedDict[tuple[uuid.UUID, uuid.UUID], Lineage] = OrderedDict()


def _keep(key: tuple[uuid.UUID, uuid.UUID], lineage: Lineage) -> None:
    _KNOWN[key] = lineage
    _KNOWN.move_to_end(key)
    while len(_KNOWN) > KEPT_LINEAGES:
        _KNOWN.popitem(last=False)


class LineageReader:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    async def of(self, agent_session_id: uuid.UUID) -> Lineage:
        key = (self.scope.tenant_id, agent_session_id)
        known = _KNOWN.get(key)
        if known is not None:
            _KNOWN.move_to_end(key)
            return known
        # The agent-session row too: a lineage is kept only once its agent session is seen to
        # exist (a fork still being made in another transaction shows neither).
        rows = (
            await self.db.execute(
                select(
                    AgentSession.agent_session_id,
                    AgentSessionLineage.ancestor_session_id,
                    AgentSessionLineage.upto_seq,
                    AgentSessionLineage.upto_archive_seq,
                )
                .outerjoin(
                    AgentSessionLineage,
                    and_(
                        AgentSessionLineage.tenant_id == AgentSession.tenant_id,
                        AgentSessionLineage.agent_session_id == AgentSession.agent_session_id,
                    ),
                )
                .where(
                    AgentSession.tenant_id == self.scope.tenant_id,
                    AgentSession.agent_session_id == agent_session_id,
                )
                .order_by(AgentSessionLineage.upto_seq, AgentSessionLineage.upto_archive_seq)
            )
        ).all()
        lineage = Lineage(
            agent_session_id,
            tuple(Segment(*row[1:]) for row in rows if row.ancestor_session_id is not None),
        )
        if rows:
            _keep(key, lineage)
        return lineage

    async def record(self, agent_session_id: uuid.UUID, ancestors: Sequence[Segment]) -> None:
        """Store a new fork's ancestors."""
        if not ancestors:
            return
        await self.db.execute(
            insert(AgentSessionLineage),
            [
                {
                    "tenant_id": self.scope.tenant_id,
                    "agent_session_id": agent_session_id,
                    "ancestor_session_id": segment.agent_session_id,
                    "upto_seq": segment.upto_seq,
                    "upto_archive_seq": segment.upto_archive_seq,
                }
                for segment in ancestors
            ],
        )
        _KNOWN.pop((self.scope.tenant_id, agent_session_id), None)
