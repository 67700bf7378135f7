"""Preparing idle agent sessions' next archives, against the real database: what is stored and
when, that an archive's job resumes from it with exactly the result of a job from the start
(working memory, sources, decisions and long-term memories), and that a retraction, a
redaction or a later commit leaves nothing behind that could be resumed wrongly."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import text

from app.archives.generation import WorkingMemoryGenerator
from app.archives.preparing import SLICE, Preparer
from app.archives.worker import ArchiveWorker, WorkerConfig
from app.archives.working_memory import WorkingMemory
from app.db import Database
from app.memories.extraction import MemoryExtractor
from tests.conftest import AppFactory, make_tenant
from tests.support.api import append, commit, create_session, user
from tests.support.long_sessions import coding_session
from tests.support.tenants import TenantKeys

GENERATOR = WorkingMemoryGenerator(None, max_input_tokens=5_000)
"""The smallest input budget: a few turns a batch, so a session of 30 turns takes several."""
MEMORIES = MemoryExtractor.offline()
FAST = WorkerConfig(lease_s=30, max_attempts=3, poll_s=0.05, backoff_base_s=0, backoff_max_s=0)
KEEP = 4


# A database of its own for each test: the workers below claim archives across tenants.
@pytest.fixture
def database(own_database: Database) -> Database:
    return own_database


@pytest.fixture
async def client(database: Database, app_client: AppFactory) -> AsyncIterator[httpx.AsyncClient]:
    async with app_client(database) as http:
        yield http


@pytest.fixture
async def tenant(database: Database) -> TenantKeys:
    return await make_tenant(database)


def preparer(database: Database, *, idle_s: float = 0.0) -> Preparer:
    return Preparer(database, GENERATOR, MEMORIES, idle_s=idle_s)


def resumed_count(answer: str) -> float:
    value = REGISTRY.get_sample_value("workmem_archives_resumed_total", {"resumed": answer})
    return value or 0.0


async def session_with(
    client: httpx.AsyncClient, keys: TenantKeys, messages: list[dict[str, Any]], **body: Any
) -> str:
    # A user of its own: memories are kept per user, and twins must not share them.
    agent_session_id = await create_session(
        client, keys, keep_recent_count=KEEP, user_id=f"user-{uuid.uuid4().hex[:8]}", **body
    )
    for start in range(0, len(messages), 50):
        await append(client, keys, agent_session_id, messages[start : start + 50])
    return agent_session_id


async def archive_all(database: Database) -> None:
    worker = ArchiveWorker(database, GENERATOR, FAST, memories=MEMORIES)
    try:
        while await worker.run_once() is not None:
            pass
    finally:
        await worker.close()


async def stored_row(database: Database, keys: TenantKeys, agent_session_id: str) -> Any:
    async with database.tenant(keys.tenant_id) as db:
        return (
            await db.execute(
                text(
                    "SELECT first_seq, end_seq, prior_archive_seq FROM prepared_generations"
                    " WHERE agent_session_id = :id"
                ),
                {"id": agent_session_id},
            )
        ).one_or_none()


async def made(database: Database, keys: TenantKeys, agent_session_id: str) -> dict[str, Any]:
    """What the agent session's archives made: section versions (with their sources and
    decisions), overviews and usage, and long-term memories."""
    async with database.tenant(keys.tenant_id) as db:
        sections = (
            await db.execute(
                text(
                    "SELECT archive_seq, section, content, sources, op_applied, guard, reason,"
                    " details FROM wm_section_versions WHERE agent_session_id = :id"
                    " ORDER BY archive_seq, position"
                ),
                {"id": agent_session_id},
            )
        ).all()
        archives = (
            await db.execute(
                text(
                    "SELECT archive_seq, status, overview, usage, memories FROM archives"
                    " WHERE agent_session_id = :id ORDER BY archive_seq"
                ),
                {"id": agent_session_id},
            )
        ).all()
        memories = (
            await db.execute(
                text(
                    "SELECT category, content, confidence, slot, slot_value, source_seqs"
                    " FROM memories WHERE agent_session_id = :id ORDER BY content"
                ),
                {"id": agent_session_id},
            )
        ).all()
    assert archives
    assert all(row.status == "done" for row in archives)
    assert memories
    return {
        "sections": [tuple(row) for row in sections],
        "archives": [tuple(row) for row in archives],
        "memories": [tuple(row) for row in memories],
    }


async def test_a_job_resumes_from_what_was_prepared_and_makes_what_a_job_from_the_start_makes(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    messages = coding_session(30)
    prepared = await session_with(client, tenant, messages)
    cold = await session_with(client, tenant, messages)
    assert await preparer(database).prepare(tenant.tenant_id, uuid.UUID(prepared)) == "stored"
    row = await stored_row(database, tenant, prepared)
    assert row.first_seq == 1
    assert row.prior_archive_seq == 0
    assert 1 < row.end_seq < len(messages) - KEEP
    assert await preparer(database).prepare(tenant.tenant_id, uuid.UUID(prepared)) == "current"

    yes = resumed_count("yes")
    for agent_session_id in (prepared, cold):
        assert (await commit(client, tenant, agent_session_id)).status_code == 202
    await archive_all(database)
    assert resumed_count("yes") == yes + 1  # the twin started from the beginning
    assert await made(database, tenant, prepared) == await made(database, tenant, cold)
    assert await stored_row(database, tenant, prepared) is None  # spent with its archive


async def test_a_long_archive_is_prepared_in_slices_stopping_when_the_session_moves(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    messages = coding_session(70)
    sessions = [await session_with(client, tenant, messages) for _ in range(2)]
    prepared, cold = (uuid.UUID(agent_session_id) for agent_session_id in sessions)
    batches = len(GENERATOR.plan(WorkingMemory.empty(), messages[: -KEEP - 1]).batches)
    assert batches > 2 * SLICE
    making = preparer(database, idle_s=60)
    making.moved(tenant.tenant_id, [prepared])  # it moves again while being prepared
    assert await making.prepare(tenant.tenant_id, prepared) == "stored"
    first = await stored_row(database, tenant, str(prepared))
    assert await preparer(database).prepare(tenant.tenant_id, prepared) == "stored"
    last = await stored_row(database, tenant, str(prepared))
    assert first.end_seq < last.end_seq  # went on from the first slice, through every slice
    assert await preparer(database).prepare(tenant.tenant_id, prepared) == "current"
    for agent_session_id in sessions:
        await commit(client, tenant, agent_session_id)
    yes = resumed_count("yes")
    await archive_all(database)
    assert resumed_count("yes") == yes + 1
    assert await made(database, tenant, sessions[0]) == await made(database, tenant, sessions[1])
    assert cold != prepared


async def test_a_second_archive_is_prepared_on_the_first_ones_working_memory(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    first, second = coding_session(30), coding_session(30, seed=300)
    sessions = [await session_with(client, tenant, first) for _ in range(2)]
    for agent_session_id in sessions:
        await commit(client, tenant, agent_session_id)
    await archive_all(database)
    for agent_session_id in sessions:
        await append(client, tenant, agent_session_id, second[:50])
        await append(client, tenant, agent_session_id, second[50:])
    assert await preparer(database).prepare(tenant.tenant_id, uuid.UUID(sessions[0])) == "stored"
    row = await stored_row(database, tenant, sessions[0])
    assert row.prior_archive_seq == 1
    assert row.first_seq == len(first) - KEEP + 1
    for agent_session_id in sessions:
        await commit(client, tenant, agent_session_id)
    await archive_all(database)
    assert await made(database, tenant, sessions[0]) == await made(database, tenant, sessions[1])


async def test_messages_appended_after_the_preparation_are_the_jobs_own(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    messages, more = coding_session(30), coding_session(6, seed=900)
    sessions = [await session_with(client, tenant, messages) for _ in range(2)]
    assert await preparer(database).prepare(tenant.tenant_id, uuid.UUID(sessions[0])) == "stored"
    yes = resumed_count("yes")
    for agent_session_id in sessions:
        await append(client, tenant, agent_session_id, more)
        await commit(client, tenant, agent_session_id)
    await archive_all(database)
    assert resumed_count("yes") == yes + 1
    assert await made(database, tenant, sessions[0]) == await made(database, tenant, sessions[1])


async def test_a_message_retracted_after_the_preparation_sends_the_job_back_to_the_start(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    messages = coding_session(30)
    sessions = [await session_with(client, tenant, messages) for _ in range(2)]
    assert await preparer(database).prepare(tenant.tenant_id, uuid.UUID(sessions[0])) == "stored"
    yes = resumed_count("yes")
    for agent_session_id in sessions:
        retracted = await client.post(
            f"/v1/sessions/{agent_session_id}/messages:retract",
            json={"seq": 5},
            headers=tenant.write,
        )
        assert retracted.status_code == 200, retracted.text
        await commit(client, tenant, agent_session_id)
    await archive_all(database)
    assert resumed_count("yes") == yes
    assert await made(database, tenant, sessions[0]) == await made(database, tenant, sessions[1])


async def test_what_was_prepared_goes_with_a_redacted_message_but_not_a_forks_copy(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    messages = coding_session(30)
    parent = await session_with(client, tenant, messages)
    forked = await client.post(
        f"/v1/sessions/{parent}:fork", json={"at_seq": len(messages)}, headers=tenant.write
    )
    assert forked.status_code == 201, forked.text
    fork = forked.json()["id"]
    for agent_session_id in (parent, fork):
        outcome = await preparer(database).prepare(tenant.tenant_id, uuid.UUID(agent_session_id))
        assert outcome == "stored"
    redacted = await client.post(
        f"/v1/sessions/{parent}/messages/1:redact", json={}, headers=tenant.write
    )
    assert redacted.status_code == 200, redacted.text
    assert await stored_row(database, tenant, parent) is None
    # The fork holds copies of the live messages it was made with: its own were not redacted.
    assert await stored_row(database, tenant, fork) is not None


async def test_a_redaction_between_reading_and_storing_stores_nothing(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    agent_session_id = await session_with(client, tenant, coding_session(30))
    making = preparer(database)
    inputs = await making.read(tenant.tenant_id, uuid.UUID(agent_session_id))
    assert not isinstance(inputs, str)
    plan = making.plan(inputs)
    checkpoint = await asyncio.to_thread(making.make, inputs, plan, inputs.previous)
    assert checkpoint is not None
    redacted = await client.post(
        f"/v1/sessions/{agent_session_id}/messages/2:redact", json={}, headers=tenant.write
    )
    assert redacted.status_code == 200, redacted.text
    outcome = await making.store(tenant.tenant_id, uuid.UUID(agent_session_id), inputs, checkpoint)
    assert outcome == "redacted"
    assert await stored_row(database, tenant, agent_session_id) is None
    # Read again, the redacted message is what the checkpoint is made of.
    assert await making.prepare(tenant.tenant_id, uuid.UUID(agent_session_id)) == "stored"


async def test_an_agent_session_deleted_while_being_prepared_leaves_nothing(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    agent_session_id = await session_with(client, tenant, coding_session(30))
    making = preparer(database)
    inputs = await making.read(tenant.tenant_id, uuid.UUID(agent_session_id))
    assert not isinstance(inputs, str)
    checkpoint = await asyncio.to_thread(making.make, inputs, making.plan(inputs), None)
    assert checkpoint is not None
    deleted = await client.delete(f"/v1/sessions/{agent_session_id}", headers=tenant.write)
    assert deleted.status_code == 204, deleted.text
    outcome = await making.store(tenant.tenant_id, uuid.UUID(agent_session_id), inputs, checkpoint)
    assert outcome == "gone"
    assert await stored_row(database, tenant, agent_session_id) is None


@pytest.mark.parametrize(
    ("name", "messages", "body", "expected"),
    [
        (
            "no message past the keep window",
            [user("hello"), user("again")],
            {},
            "within_keep_window",
        ),
        ("a short archive", coding_session(3), {}, "single_batch"),
        (
            "the working memory off",
            coding_session(30),
            {"memory_policy": {"working_memory": False}},
            "working_memory_off",
        ),
    ],
)
async def test_what_is_not_prepared(
    client: httpx.AsyncClient,
    database: Database,
    tenant: TenantKeys,
    name: str,
    messages: list[dict[str, Any]],
    body: dict[str, Any],
    expected: str,
) -> None:
    agent_session_id = await session_with(client, tenant, messages, **body)
    outcome = await preparer(database).prepare(tenant.tenant_id, uuid.UUID(agent_session_id))
    assert outcome == expected, name
    assert await stored_row(database, tenant, agent_session_id) is None


async def test_an_archive_not_done_or_an_agent_session_gone_is_not_prepared(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    agent_session_id = await session_with(client, tenant, coding_session(30))
    await commit(client, tenant, agent_session_id)  # pending: no worker runs here
    await append(client, tenant, agent_session_id, coding_session(30, seed=50)[:50])
    outcome = await preparer(database).prepare(tenant.tenant_id, uuid.UUID(agent_session_id))
    assert outcome == "archive_not_done"
    assert await preparer(database).prepare(tenant.tenant_id, uuid.uuid4()) == "gone"
    await archive_all(database)


async def test_the_loop_prepares_an_agent_session_once_it_is_idle(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    agent_session_id = await session_with(client, tenant, coding_session(30))
    loop = preparer(database, idle_s=0.2)
    stop = asyncio.Event()
    running = asyncio.create_task(loop.run(stop))
    try:
        loop.moved(tenant.tenant_id, [uuid.UUID(agent_session_id)])
        await asyncio.sleep(0.05)
        assert await stored_row(database, tenant, agent_session_id) is None  # not idle yet
        for _ in range(200):
            if await stored_row(database, tenant, agent_session_id) is not None:
                break
            await asyncio.sleep(0.05)
        assert await stored_row(database, tenant, agent_session_id) is not None
    finally:
        stop.set()
        await running


def test_a_model_generation_is_not_prepared(database: Database) -> None:
    from app.llm.openai_provider import OpenAIChatModel

    chat = OpenAIChatModel(
        base_url="http://127.0.0.1:9/v1", api_key="k", model="m", timeout_s=1, max_retries=0
    )
    with pytest.raises(ValueError, match="only the offline generation"):
        Preparer(database, WorkingMemoryGenerator(chat), MEMORIES, idle_s=1)
