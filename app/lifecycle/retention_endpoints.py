"""HTTP routes of a tenant's retention policy: ``GET`` and ``PUT /v1/tenant/retention``
(an admin key bound to no user: the policy is tenant-wide)."""

from __future__ import annotations

from fastapi import APIRouter

from app.deps import DatabaseDep
from app.lifecycle.retention_policy import Retention
from app.lifecycle.retention_schemas import RetentionPolicyRead, RetentionPolicyUpdate
from app.lifecycle.retention_service import RetentionService, StoredRetention
from app.tenancy.auth import Admin
from app.web.problems import TENANT_ROUTE, WITH_BODY, problems
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/v1/tenant",
    tags=["tenant"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE),
)


def _read(stored: StoredRetention) -> RetentionPolicyRead:
    return RetentionPolicyRead(
        archive_messages_days=stored.policy.archive_messages_days,
        idle_session_days=stored.policy.idle_session_days,
        memory_days=dict(stored.policy.memory_days),
        updated_at=stored.updated_at,
        updated_by=stored.updated_by,
    )


@router.get("/retention")
async def get_retention(principal: Admin, database: DatabaseDep) -> RetentionPolicyRead:
    """The tenant's retention policy; every limit null (keep everything) until one is set."""
    async with database.tenant(principal.tenant_id) as db:
        return _read(await RetentionService(db, principal).get())


@router.put("/retention", responses=problems(*WITH_BODY))
async def put_retention(
    body: RetentionPolicyUpdate, principal: Admin, database: DatabaseDep
) -> RetentionPolicyRead:
    """Replace the tenant's retention policy. The workers apply it at their next pass: raw
    messages of old archives, idle agent sessions; a memory's expiry is set when it is written."""
    policy = Retention.checked(
        archive_messages_days=body.archive_messages_days,
        idle_session_days=body.idle_session_days,
        memory_days={str(category): days for category, days in body.memory_days.items()},
    )
    async with database.tenant(principal.tenant_id) as db:
        return _read(await RetentionService(db, principal).replace(policy))
