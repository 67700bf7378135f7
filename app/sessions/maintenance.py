"""Maintenance jobs over agent sessions: the ``pending_tokens`` recomputation.

A job is an edge: it opens one tenant-scoped transaction per agent session it checks, so a long
run holds no lock for long and never crosses tenants inside one transaction.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select

from app.db import Database
from app.models import AgentSession
from app.sessions.service import AgentSessionService
from app.tenancy import service as tenancy
from app.tenancy.principal import Principal, Role

MAINTENANCE_KEY_ID = uuid.UUID(int=0)


def maintenance_principal(tenant_id: uuid.UUID) -> Principal:
    """Acts inside one tenant on behalf of the operator; never derived from a request."""
    return Principal(
        tenant_id=tenant_id, api_key_id=MAINTENANCE_KEY_ID, role=Role.ADMIN, user_id=None
    )


async def check_all_pending(database: Database, *, repair: bool) -> dict[str, Any]:
    async with database.unscoped() as db:
        tenant_ids = await tenancy.tenant_ids(db)
    checked = 0
    drifted: list[dict[str, Any]] = []
    for tenant_id in tenant_ids:
        principal = maintenance_principal(tenant_id)
        async with database.tenant(tenant_id) as db:
            agent_session_ids = list(
                await db.scalars(
                    select(AgentSession.agent_session_id).where(AgentSession.tenant_id == tenant_id)
                )
            )
        for agent_session_id in agent_session_ids:
            async with database.tenant(tenant_id) as db:
                drift = await AgentSessionService(db, principal).check_pending(
                    agent_session_id, repair=repair
                )
            checked += 1
            if drift.stored != drift.recomputed:
                drifted.append(
                    {
                        "tenant_id": str(tenant_id),
                        "agent_session_id": str(agent_session_id),
                        "stored": drift.stored,
                        "recomputed": drift.recomputed,
                        "repaired": repair,
                    }
                )
    return {"checked": checked, "drifted": drifted}
