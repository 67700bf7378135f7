"""Archive helpers: a recording generator, the archive rows of a tenant, and a scenario of
commits against a scripted model (the real ``openai`` SDK against the local test server)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import text

from app.archives.generation import Generated, WorkingMemoryGenerator
from app.archives.plan import Resume
from app.archives.working_memory import WorkingMemory
from app.db import Database
from app.wm.merge import merge
from tests.support.api import append, assistant, commit, user
from tests.support.fake_openai import FakeOpenAI
from tests.support.tenants import TenantKeys


class RecordingGenerator(WorkingMemoryGenerator):
    """Appends one fact per batch naming the messages it saw, and remembers what it processed."""

    def __init__(self, delay_s: float = 0.0) -> None:
        super().__init__(None)
        self.seen: list[tuple[str, ...]] = []
        self.delay_s = delay_s

    async def generate(
        self,
        prior: WorkingMemory,
        messages: Sequence[Mapping[str, object]],
        *,
        seqs: Sequence[int] | None = None,
        pins: Sequence[str] = (),
        pinned_seqs: frozenset[int] = frozenset(),
        resume: Resume | None = None,
    ) -> Generated:
        contents = tuple(str(m.get("content")) for m in messages)
        self.seen.append(contents)
        await asyncio.sleep(self.delay_s)
        ops = {
            "sections": {"Key Facts & Decisions": {"op": "APPEND", "items": [" | ".join(contents)]}}
        }
        return Generated(result=merge(prior.sections, ops), generator="offline")


async def archive_rows(database: Database, tenant_id: uuid.UUID) -> list[dict[str, Any]]:
    async with database.tenant(tenant_id) as db:
        result = await db.execute(
            text(
                "SELECT agent_session_id, archive_seq, status, attempt, generator,"
                " covers_failed_archives, last_error, error_stage, start_seq, end_seq"
                " FROM archives ORDER BY agent_session_id, archive_seq"
            )
        )
        return [dict(row._mapping) for row in result]


FIRST = """# Working Memory

## Session Title
Billing service migration

## Current State
Moving invoices to Postgres.

## Task & Goals
- Never deploy on Fridays

## Key Facts & Decisions
- Chose Postgres 16 because of pgvector

## Files & Context
- services/billing/app.py
- services/billing/models.py

## Errors & Corrections
- ImportError: no module named stripe

## Open Issues
- Who owns the on-call rota?
"""


def update_args(**sections: dict[str, Any]) -> str:
    names = {
        "title": "Session Title",
        "state": "Current State",
        "task": "Task & Goals",
        "facts": "Key Facts & Decisions",
        "files": "Files & Context",
        "errors": "Errors & Corrections",
        "issues": "Open Issues",
    }
    payload = {name: {"op": "KEEP"} for name in names.values()}
    for short, op in sections.items():
        payload[names[short]] = op
    return json.dumps({"sections": payload})


@dataclass
class Scenario:
    http: httpx.AsyncClient
    keys: TenantKeys
    model: FakeOpenAI
    database: Database
    agent_session_id: str

    async def commit_turn(self, content: str) -> dict[str, Any]:
        await append(self.http, self.keys, self.agent_session_id, [user(content), assistant("ok")])
        response = await commit(
            self.http, self.keys, self.agent_session_id, keep_recent_count=0, wait=True
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def sections(self, archive_seq: int) -> dict[str, dict[str, Any]]:
        async with self.database.tenant(self.keys.tenant_id) as db:
            rows = await db.execute(
                text(
                    "SELECT section::text AS section, content, content_sha256, op_requested,"
                    " op_applied, guard, reason, details, generator, model, prompt_version"
                    " FROM wm_section_versions WHERE archive_seq = :seq"
                ),
                {"seq": archive_seq},
            )
            return {row.section: dict(row._mapping) for row in rows}
