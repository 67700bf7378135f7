"""Who is calling: the tenant, role and optional user binding taken from a credential."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    ADMIN = "admin"
    WRITER = "writer"
    READER = "reader"


@dataclass(frozen=True, slots=True)
class Scope:
    """What a credential may see: one tenant, and within it optionally one user's sessions.

    Every repository takes one; row-level security enforces the tenant part again.
    """

    tenant_id: uuid.UUID
    user_id: str | None = None


@dataclass(frozen=True, slots=True)
class Principal:
    tenant_id: uuid.UUID
    api_key_id: uuid.UUID
    role: Role
    user_id: str | None

    @property
    def can_write(self) -> bool:
        return self.role in (Role.ADMIN, Role.WRITER)

    @property
    def scope(self) -> Scope:
        return Scope(tenant_id=self.tenant_id, user_id=self.user_id)
