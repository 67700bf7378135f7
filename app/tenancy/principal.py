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
class Principal:
    tenant_id: uuid.UUID
    api_key_id: uuid.UUID
    role: Role
    user_id: str | None

    @property
    def can_write(self) -> bool:
        return self.role in (Role.ADMIN, Role.WRITER)
