"""Memory policies as the API and the archive job use them: a user's default, set by a tenant
admin, and the policy an archive of an agent session obeys.

Owns the precedence (the agent session's own fields, then its user's default, then everything
on, as ``policy.resolve`` says) over what ``policy_store`` holds. Never stores an agent session's
own policy (the agent session's service does) and never commits.
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import NotFound
from app.memories.policy import EffectivePolicy, MemoryPolicy, parse_policy, resolve
from app.memories.policy_store import AgentSessionPolicies, PolicyStore, StoredUserPolicy
from app.tenancy.principal import Principal, Scope


class UserPolicyService:
    """A user's default policy, under a tenant admin's key."""

    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.principal = principal
        self.store = PolicyStore(db, Scope(principal.tenant_id))

    async def get(self, user_id: str) -> StoredUserPolicy:
        stored = await self.store.user_policy(user_id)
        if stored is None:
            raise NotFound(f"no memory policy is set for user {user_id!r}")
        return stored

    async def set(self, user_id: str, policy: MemoryPolicy) -> StoredUserPolicy:
        return await self.store.set_user_policy(
            user_id, policy.to_json(), self.principal.api_key_id
        )


async def effective_policy(
    db: AsyncSession, tenant_id: uuid.UUID, agent_session_id: uuid.UUID
) -> EffectivePolicy:
    """What an archive of the agent session obeys now."""
    return effective(await PolicyStore(db, Scope(tenant_id)).of_agent_session(agent_session_id))


def effective(found: AgentSessionPolicies) -> EffectivePolicy:
    """The policy the agent session's own fields and its user's default make together."""
    return resolve(
        None if found.own is None else parse_policy(found.own),
        None if found.users is None else parse_policy(found.users),
    )
