"""The statements of a waiting commit's memory write: one a kind of change, whatever the batch.

Counted through a cursor that sees ORM, Core and driver-level statements alike: the memories a
commit adds go in with one statement, the ones it restates are rewritten with one, the ones it
contradicts are marked with one, and every event of the commit goes in with one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest

from app.config import Settings
from tests.conftest import TenantKeys, make_tenant
from tests.memories.helpers import memories, new_session, state
from tests.support.postgres import PostgresForTests
from tests.support.statements import StatementLog, recorded_app

FEW = ("I live in Rome.", "My favorite color is teal.")
MANY = (
    *FEW,
    "I have a dog named Biscuit.",
    "I work as a nurse at the city hospital.",
    "I've learned that night trains are cheaper.",
    "I went to a pottery class last Saturday.",
)
CHANGES = (
    "I moved to Berlin last month.",
    "My favorite color is navy.",
    "I have a dog named Biscuit.",
    "I work as a nurse at the city hospital.",
)


@dataclass
class Counted:
    http: httpx.AsyncClient
    log: StatementLog
    keys: TenantKeys

    async def commit(self, agent_session_id: str, *texts: str) -> tuple[dict[str, int], list[str]]:
        """The memory report of a waiting commit of ``texts`` and its statements on memories."""
        with self.log.recording() as statements:
            archive = await state(self.http, self.keys, agent_session_id, *texts)
        report = archive["memories"]
        counts = {kind: report[kind] for kind in ("added", "updated", "superseded")}
        return counts, [s for s in statements if "memories " in s or "memory_events" in s]


@pytest.fixture(scope="module")
async def counted(postgres: PostgresForTests, settings: Settings) -> AsyncIterator[Counted]:
    async with recorded_app(postgres, settings, "wmmemorywrites") as (http, log, database):
        yield Counted(http, log, await make_tenant(database, "memory writes"))


def writes(statements: list[str], start: str) -> int:
    return sum(1 for statement in statements if statement.startswith(start))


async def test_a_commit_adds_its_memories_and_their_events_in_one_statement_each(
    counted: Counted,
) -> None:
    few, few_statements = await counted.commit(
        await new_session(counted.http, counted.keys, "a"), *FEW
    )
    many, many_statements = await counted.commit(
        await new_session(counted.http, counted.keys, "b"), *MANY
    )
    assert (few["added"], many["added"]) == (len(FEW), len(MANY))
    for statements in (few_statements, many_statements):
        assert writes(statements, "INSERT INTO memories ") == 1
        assert writes(statements, "INSERT INTO memory_events ") == 1
        assert writes(statements, "UPDATE memories ") == 0
    assert len(few_statements) == len(many_statements)


async def test_restatements_and_contradictions_are_one_statement_each(counted: Counted) -> None:
    agent_session_id = await new_session(counted.http, counted.keys, "c")
    await counted.commit(agent_session_id, *MANY)
    report, statements = await counted.commit(agent_session_id, *CHANGES)
    assert report == {"added": 0, "updated": 2, "superseded": 2}
    assert writes(statements, "INSERT INTO memories ") == 1
    assert writes(statements, "UPDATE memories AS m SET updated_at") == 1
    assert writes(statements, "UPDATE memories AS m SET superseded_by") == 1
    assert writes(statements, "INSERT INTO memory_events ") == 1
    stored = await memories(counted.http, counted.keys.reader, include_superseded="true")
    superseded = {m["content"] for m in stored if m["superseded_by"] is not None}
    assert superseded == {"I live in Rome.", "My favorite color is teal."}
