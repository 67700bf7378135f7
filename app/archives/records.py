"""Records of the archives feature that more than one layer passes around. Pure."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from app.wm.sections import Section


@dataclass(frozen=True, slots=True, kw_only=True)
class SectionVersionRow:
    """One row of ``wm_section_versions`` as written: what a worker's merge decided, or what an
    import brought (the tenant is the repository's)."""

    agent_session_id: uuid.UUID
    archive_seq: int
    section: Section
    position: int
    content: str
    token_count: int
    item_count: int
    op_requested: str | None
    op_applied: str
    guard: str | None
    reason: str
    details: dict[str, Any]
    generator: str
    sources: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None
    prompt_version: str | None = None
    created_at: datetime | None = None
    """``None``: the database's ``now()``."""

    def values(self, tenant_id: uuid.UUID) -> dict[str, Any]:
        row = {
            "tenant_id": tenant_id,
            "agent_session_id": self.agent_session_id,
            "archive_seq": self.archive_seq,
            "section": self.section.value,
            "position": self.position,
            "content": self.content,
            "content_sha256": hashlib.sha256(self.content.encode()).hexdigest(),
            "token_count": self.token_count,
            "item_count": self.item_count,
            "op_requested": self.op_requested,
            "op_applied": self.op_applied,
            "guard": self.guard,
            "reason": self.reason,
            "details": self.details,
            "sources": self.sources,
            "generator": self.generator,
            "model": self.model,
            "prompt_version": self.prompt_version,
        }
        if self.created_at is not None:
            row["created_at"] = self.created_at
        return row


@dataclass(frozen=True, slots=True)
class ArchivedMessage:
    """A message an archive job covers: its seq and the message in OpenAI format."""

    seq: int
    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SplitRow:
    """What the split of a commit needs of one message (no message bodies are read)."""

    seq: int
    role: str
    has_tool_calls: bool
    token_count: int
    turn: int
