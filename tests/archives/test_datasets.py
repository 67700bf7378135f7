"""Working memory over real conversations: the stored history is complete, hashed and lossless.

Each dataset conversation is replayed through the API and committed every few messages with the
offline generator; then the section history is checked row by row.
"""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.db import Database
from app.replay.datasets import locomo, swe_agent, tau_airline
from app.replay.formats import Conversation
from app.replay.protected import protected_losses
from app.wm.sections import SECTIONS, Section
from tests.conftest import AppFactory, make_tenant
from tests.support.datasets import DATASETS, loaded


def conversations() -> list[Conversation]:
    if not DATASETS.is_dir():
        return []  # the parametrised test is then reported as skipped
    return [*swe_agent()[:2], *tau_airline(limit=2), locomo()[0]]


async def replay(
    http: httpx.AsyncClient, headers: dict[str, str], messages: list[dict[str, Any]], every: int
) -> tuple[str, int]:
    agent_session_id_response = await http.post("/v1/sessions", json={}, headers=headers)
    agent_session_id: str = agent_session_id_response.json()["id"]
    commits = 0
    for start in range(0, len(messages), every):
        batch = messages[start : start + every]
        appended = await http.post(
            f"/v1/sessions/{agent_session_id}/messages:batch",
            json={"messages": batch},
            headers=headers,
        )
        assert appended.status_code == 201, appended.text
        committed = await http.post(
            f"/v1/sessions/{agent_session_id}/commit",
            json={"keep_recent_count": 4, "wait": True},
            headers=headers,
        )
        assert committed.status_code == 200, committed.text
        if committed.json()["status"] != "skipped":
            assert committed.json()["status"] == "done", committed.json()
            commits += 1
    return agent_session_id, commits


@pytest.mark.parametrize("conversation", conversations(), ids=lambda c: c.name[:40])
async def test_history_is_complete_and_protected_items_persist(
    own_database: Database, app_client: AppFactory, conversation: Conversation
) -> None:
    keys = await make_tenant(own_database)
    messages = conversation.messages[:400]
    async with app_client(own_database) as http:
        every = max(4, min(12, len(messages) // 5))
        agent_session_id, commits = await replay(http, keys.write, messages, every=every)
        current = await http.get(
            f"/v1/sessions/{agent_session_id}/working-memory", headers=keys.read
        )
    assert commits >= 2

    async with own_database.tenant(keys.tenant_id) as db:
        rows = (
            await db.execute(
                text(
                    "SELECT archive_seq, section::text AS section, content, content_sha256,"
                    " token_count FROM wm_section_versions WHERE agent_session_id = :id"
                    " ORDER BY archive_seq, position"
                ),
                {"id": agent_session_id},
            )
        ).all()
    assert len(rows) == 7 * commits
    versions: dict[Section, list[tuple[int, str]]] = {section: [] for section in SECTIONS}
    for row in rows:
        assert row.content_sha256 == hashlib.sha256(row.content.encode()).hexdigest()
        versions[Section(row.section)].append((row.archive_seq, row.content))
    assert protected_losses(versions) == []
    assert current.json()["archive_seq"] == commits
    assert current.json()["tokens"] <= 12_000


async def test_one_dataset_working_memory_is_useful(
    own_database: Database, app_client: AppFactory
) -> None:
    """A SWE-agent run: the file it edits and the error it hits end up in working memory."""
    conversation = loaded(swe_agent)[-1]
    keys = await make_tenant(own_database)
    async with app_client(own_database) as http:
        agent_session_id, _ = await replay(http, keys.write, conversation.messages, every=10)
        current = (
            await http.get(f"/v1/sessions/{agent_session_id}/working-memory", headers=keys.read)
        ).json()
    files = current["sections"]["Files & Context"]
    assert "src/marshmallow/fields.py" in files
