"""HTTP routes of a user's default memory policy (``/v1/users/{user_id}/memory-policy``).

Tenant admins only (a key not bound to a user): the default applies to every agent session of
that user that does not set the field itself. Owns the request's transaction; decides nothing.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from pydantic import AfterValidator

from app.deps import DatabaseDep
from app.memories.policies import UserPolicyService
from app.memories.policy_store import StoredUserPolicy
from app.memories.schemas import MemoryPolicyFields, UserMemoryPolicyRead
from app.tenancy.auth import Admin
from app.validation import require_storable
from app.web.problems import TENANT_ROUTE, WITH_BODY, problems
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/v1/users",
    tags=["memory policy"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE),
)


def _storable(value: str) -> str:
    require_storable(value)
    return value


UserPath = Annotated[
    str,
    Path(min_length=1, max_length=256, description="the user's label"),
    AfterValidator(_storable),
]


def _read(stored: StoredUserPolicy) -> UserMemoryPolicyRead:
    return UserMemoryPolicyRead(
        user_id=stored.user_id,
        memory_policy=MemoryPolicyFields.of(stored.policy),
        updated_by=stored.updated_by,
        updated_at=stored.updated_at,
    )


@router.get("/{user_id}/memory-policy", responses=problems(404, 422))
async def get_user_memory_policy(
    user_id: UserPath, principal: Admin, database: DatabaseDep
) -> UserMemoryPolicyRead:
    """The user's default memory policy; 404 when none is set (every field then falls to
    everything on)."""
    async with database.tenant(principal.tenant_id) as db:
        return _read(await UserPolicyService(db, principal).get(user_id))


@router.put("/{user_id}/memory-policy", responses=problems(404, *WITH_BODY))
async def set_user_memory_policy(
    user_id: UserPath, body: MemoryPolicyFields, principal: Admin, database: DatabaseDep
) -> UserMemoryPolicyRead:
    """Replace the user's default memory policy (a field left out is not set; ``{}`` sets
    none). Takes effect at the next archive of each of the user's agent sessions."""
    async with database.tenant(principal.tenant_id) as db:
        return _read(await UserPolicyService(db, principal).set(user_id, body.policy()))
