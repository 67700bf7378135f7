"""Request and response bodies of the operator API."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.tenancy.principal import Role
from app.validation import require_storable


class TenantCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)

    @model_validator(mode="after")
    def _storable(self) -> TenantCreate:
        require_storable(self.model_dump())
        return self


class TenantRead(BaseModel):
    tenant_id: uuid.UUID
    name: str
    created_at: datetime


class ApiKeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Role = Role.WRITER
    name: str | None = Field(default=None, max_length=200)
    user_id: str | None = Field(default=None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _storable(self) -> ApiKeyCreate:
        require_storable(self.model_dump())
        return self


class ApiKeyRead(BaseModel):
    api_key_id: uuid.UUID
    tenant_id: uuid.UUID
    prefix: str
    role: Role
    name: str | None
    user_id: str | None
    created_at: datetime
    revoked_at: datetime | None


class ApiKeyIssued(ApiKeyRead):
    key: str = Field(description="the full key; shown once, only its hash is stored")


class ApiKeyPage(BaseModel):
    items: list[ApiKeyRead]
    next_after: uuid.UUID | None = Field(
        description="pass as after to read the next page; null at the end"
    )
