"""The statements of a waiting commit: phase 1, the claim, the job's read and write, the answer.

Counted through a cursor that sees ORM, Core and driver-level statements alike, on messages
that make no long-term memory (so the count is the archive's own). What it pins: the seven
section versions go in one statement, the job reads its messages with their retractions in one
and the agent-session row once, and the waiting
request takes its own job's outcome as the archive's status instead of reading it again.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest

from app.archives.records import SectionVersionRow
from app.archives.repository import ArchiveRepository
from app.config import Settings
from app.db import Database
from app.tenancy.principal import Scope
from app.wm.sections import SECTIONS
from tests.conftest import TenantKeys, make_tenant
from tests.support.postgres import PostgresForTests
from tests.support.statements import StatementLog, recorded_app


@dataclass
class Counted:
    http: httpx.AsyncClient
    log: StatementLog
    keys: TenantKeys
    database: Database

    async def waiting_commit(self, messages: int) -> list[str]:
        """The statements of a waiting commit of a new agent session with ``messages``."""
        created = await self.http.post("/v1/sessions", json={}, headers=self.keys.write)
        agent_session_id = created.json()["id"]
        batch = [
            {"role": "user" if n % 2 == 0 else "assistant", "content": f"step {n} of the plan"}
            for n in range(messages)
        ]
        response = await self.http.post(
            f"/v1/sessions/{agent_session_id}/messages:batch",
            json={"messages": batch},
            headers=self.keys.write,
        )
        assert response.status_code == 201, response.text
        with self.log.recording() as statements:
            response = await self.http.post(
                f"/v1/sessions/{agent_session_id}/commit",
                json={"keep_recent_count": 2, "wait": True},
                headers=self.keys.write,
            )
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "done", response.text
        return statements


@pytest.fixture(scope="module")
async def counted(postgres: PostgresForTests, settings: Settings) -> AsyncIterator[Counted]:
    async with recorded_app(postgres, settings, "wmcommitcount") as (http, log, database):
        counted = Counted(http, log, await make_tenant(database, "commits"), database)
        await counted.waiting_commit(4)  # warm-up: the key and the lineage are cached after it
        yield counted


def matching(statements: list[str], *needles: str) -> list[str]:
    return [s for s in statements if all(needle in s for needle in needles)]


async def test_a_waiting_commit_costs_the_same_whatever_the_archive_holds(
    counted: Counted,
) -> None:
    few = await counted.waiting_commit(6)
    many = await counted.waiting_commit(300)
    assert len(few) == len(many), "\n".join(many)


async def test_a_waiting_commit_writes_its_sections_at_once_and_reads_nothing_twice(
    counted: Counted,
) -> None:
    statements = await counted.waiting_commit(40)
    # Phase 1 reads the first turn inside the archive's insert.
    assert not [s for s in statements if s.startswith("SELECT messages.turn FROM messages")]
    [insert] = matching(statements, "INSERT INTO archives")
    assert "messages.turn" in insert
    # The claim, then the seven section versions in one multi-row statement.
    assert len(matching(statements, "workmem_claim_archive(")) == 1
    [sections] = matching(statements, "INSERT INTO wm_section_versions")
    assert sections.count("position") >= 7, sections
    # The job reads its messages as JSON arrays, with their retractions, in one statement.
    [covered] = matching(statements, "FROM messages", "json_agg(messages.message")
    assert "message_retractions" in covered
    assert not [s for s in statements if s.startswith("SELECT message_retractions")]
    # The job reads the agent-session row once (its owner and memory policies).
    assert len(matching(statements, "user_memory_policies.policy")) == 1
    assert not matching(statements, "SELECT agent_sessions.user_id, agent_sessions.agent_id FROM")
    # The archive turns done with its queue row in one statement.
    [finished] = matching(statements, "UPDATE archives")
    assert finished.startswith("WITH changed AS (UPDATE archives")
    assert "UPDATE claimable_archives" in finished
    assert len(matching(statements, "UPDATE claimable_archives")) == 1
    # The archive row is read by the job (to own it, then to lock it: two columns) and once
    # for the answer: no status poll after the job ran.
    reads = [s for s in statements if s.startswith("SELECT archives.")]
    assert len(reads) == 3, "\n".join(statements)


async def test_section_versions_that_differ_in_their_nulls_go_in_one_statement(
    counted: Counted,
) -> None:
    """A merge decides each section its own way: a guard on one, no requested op on another.
    The rows still go as one statement (a bulk insert that leaves out NULLs would split them)."""
    created = await counted.http.post("/v1/sessions", json={}, headers=counted.keys.write)
    agent_session_id = uuid.UUID(created.json()["id"])
    await counted.http.post(
        f"/v1/sessions/{agent_session_id}/messages:batch",
        json={"messages": [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]},
        headers=counted.keys.write,
    )
    accepted = await counted.http.post(
        f"/v1/sessions/{agent_session_id}/commit",
        json={"keep_recent_count": 0},
        headers=counted.keys.write,
    )
    assert accepted.status_code == 202, accepted.text
    rows = [
        SectionVersionRow(
            agent_session_id=agent_session_id,
            archive_seq=1,
            section=section,
            position=position,
            content=f"- item {position}" if position % 2 else "",
            token_count=position,
            item_count=position % 2,
            op_requested=None if position % 3 == 0 else "UPDATE",
            op_applied="KEEP" if position % 3 == 0 else "UPDATE",
            guard="A" if position == 2 else None,
            reason="ok",
            details={"dropped": position} if position == 4 else {},
            sources=[{"item": "x", "seqs": [1]}] if position % 2 else [],
            generator="offline",
            model=None if position < 5 else "m",
        )
        for position, section in enumerate(SECTIONS, start=1)
    ]
    async with counted.database.tenant(counted.keys.tenant_id) as db:
        with counted.log.recording() as statements:
            await ArchiveRepository(db, Scope(counted.keys.tenant_id)).insert_sections(rows)
        await db.rollback()
    [insert] = statements
    assert insert.startswith("INSERT INTO wm_section_versions"), insert


async def test_phase_one_is_four_statements_whatever_the_history(counted: Counted) -> None:
    """A commit that does not wait: the tenant's token, the agent-session row locked, the tail
    and the messages before it, then the archive's insert with the agent session's counters and
    the queue row as ``WITH``s of it; the answer is that insert's row (no second transaction)."""
    sent: list[list[str]] = []
    for messages in (10, 300):
        created = await counted.http.post("/v1/sessions", json={}, headers=counted.keys.write)
        agent_session_id = created.json()["id"]
        batch = [
            {"role": "user" if n % 2 == 0 else "assistant", "content": f"step {n}"}
            for n in range(messages)
        ]
        await counted.http.post(
            f"/v1/sessions/{agent_session_id}/messages:batch",
            json={"messages": batch},
            headers=counted.keys.write,
        )
        with counted.log.recording() as statements:
            response = await counted.http.post(
                f"/v1/sessions/{agent_session_id}/commit",
                json={"keep_recent_count": 2},
                headers=counted.keys.write,
            )
        assert response.status_code == 202, response.text
        body = response.json()
        assert (body["status"], body["archive"]["status"]) == ("accepted", "pending")
        assert body["archive"]["end_seq"] == messages - 2
        sent.append(statements)
        session = await counted.http.get(
            f"/v1/sessions/{agent_session_id}", headers=counted.keys.write
        )
        counters = session.json()
        assert (counters["live_message_count"], counters["archive_count"]) == (2, 1), counters
        assert counters["keep_recent_count"] == 2, counters
    few, many = sent
    assert len(few) == len(many) == 4, "\n".join(many)
    assert few[0].startswith("SELECT set_config('app.tenant_token'")
    assert few[1].startswith("SELECT agent_sessions.")
    assert few[1].endswith("FOR UPDATE")
    assert few[2].startswith("SELECT messages.seq")
    [write] = matching(few, "INSERT INTO archives")
    assert write.startswith("WITH counters AS (UPDATE agent_sessions")
    assert "INSERT INTO claimable_archives" in write
    assert "messages.turn" in write
    assert " RETURNING archives." in write
