"""Request and response models of a tenant's retention policy (``/v1/tenant/retention``)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from app.lifecycle.retention_policy import MAX_DAYS, MIN_DAYS
from app.memories.schemas import CategoryName

Days = Annotated[int, Field(ge=MIN_DAYS, le=MAX_DAYS, strict=True)]


class RetentionPolicyUpdate(BaseModel):
    """The whole policy (PUT replaces it): a limit left out or null is off."""

    model_config = ConfigDict(extra="forbid")
    archive_messages_days: Days | None = Field(
        default=None,
        description="raw messages of archives older than this are purged; the archive and the "
        "working memory stay",
    )
    idle_session_days: Days | None = Field(
        default=None,
        description="agent sessions with no append or commit for this long are deleted",
    )
    memory_days: dict[CategoryName, Days] = Field(
        default_factory=dict,
        description="per category: a new memory expires this many days after it was last "
        "stated; a category left out never expires",
    )


class RetentionPolicyRead(BaseModel):
    archive_messages_days: int | None
    idle_session_days: int | None
    memory_days: dict[str, int]
    updated_at: datetime | None = Field(description="null while the tenant never set a policy")
    updated_by: uuid.UUID | None = Field(
        description="the API key that set it; null when the operator's command did"
    )
