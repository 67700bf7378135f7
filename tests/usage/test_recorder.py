"""Usage rows against the real Postgres: the metered providers, the background writer, what it
does when a row cannot be written, and the report by day and model."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import text

from app.db import Database
from app.llm.breaker import CircuitOpen
from app.llm.fakes import ScriptedChatModel, tool_call
from app.llm.ports import PermanentModelError
from app.memories.embedding import EmbeddingError
from app.memories.tool import RECORD_MEMORIES_TOOL
from app.observability import TENANT_ID
from app.usage.metered import MeteredChatModel, MeteredEmbedder
from app.usage.recorder import UsageRecorder
from app.usage.records import CallScope, ModelCallRecord, calls_for
from app.wm.schema import CREATE_TOOL, UPDATE_TOOL
from tests.conftest import TenantKeys, make_tenant


def dropped(reason: str) -> float:
    value = REGISTRY.get_sample_value("workmem_model_usage_rows_dropped_total", {"reason": reason})
    return value or 0.0


def row(tenant_id: uuid.UUID, **changes: object) -> ModelCallRecord:
    values: dict[str, object] = {
        "scope": CallScope(tenant_id),
        "purpose": "wm_update",
        "model": "gpt-row",
        "input_tokens": 100,
        "output_tokens": 10,
        "latency_ms": 50,
        "outcome": "ok",
        "at": datetime.now(UTC),
    }
    values.update(changes)
    return ModelCallRecord(**values)  # type: ignore[arg-type]


async def stored(admin_database: Database, tenant_id: uuid.UUID) -> list[tuple[object, ...]]:
    async with admin_database.unscoped() as db:
        rows = await db.execute(
            text(
                "SELECT purpose, model, input_tokens, output_tokens, outcome, agent_session_id,"
                " archive_seq FROM model_calls WHERE tenant_id = :tenant ORDER BY created_at"
            ),
            {"tenant": tenant_id},
        )
        return [tuple(found) for found in rows]


async def test_each_chat_call_is_a_row_of_its_purpose_and_outcome(
    database: Database, admin_database: Database, tenant: TenantKeys
) -> None:
    recorder = UsageRecorder(database)
    scripted = ScriptedChatModel(
        [
            tool_call("{}", prompt_tokens=700, completion_tokens=30, model="gpt-metered"),
            tool_call("{}", prompt_tokens=200, completion_tokens=20, model="gpt-metered"),
            PermanentModelError("bad request", code="client_error"),
            CircuitOpen("models.example"),
            tool_call("{}", prompt_tokens=5, completion_tokens=1, model="gpt-metered"),
        ],
        model="gpt-metered",
    )
    chat = MeteredChatModel(scripted, recorder.record)
    session = uuid.uuid4()
    with calls_for(tenant.tenant_id, session, 4):
        await chat.call_tool(system="s", user="u", tool=CREATE_TOOL["function"])
        await chat.call_tool(system="s", user="u", tool=UPDATE_TOOL["function"])
        with pytest.raises(PermanentModelError):
            await chat.call_tool(system="s", user="u", tool=RECORD_MEMORIES_TOOL)
        with pytest.raises(CircuitOpen):
            await chat.call_tool(system="s", user="u", tool=UPDATE_TOOL["function"])
        await chat.call_tool(system="s", user="u", tool={"name": "something_else"})
    assert recorder.queued == 5
    assert await recorder.flush() == 5
    # The agent session does not exist: the row keeps the archive seq, not the id.
    assert await stored(admin_database, tenant.tenant_id) == [
        ("wm_create", "gpt-metered", 700, 30, "ok", None, 4),
        ("wm_update", "gpt-metered", 200, 20, "ok", None, 4),
        ("extraction", "gpt-metered", 0, 0, "error", None, 4),
        ("wm_update", "gpt-metered", 0, 0, "refused", None, 4),
        ("other", "gpt-metered", 5, 1, "ok", None, 4),
    ]


class CountedEmbedder:
    """An embedder that reports one token per word, or fails when told to."""

    identity = "counted:v1:3"
    dim = 3

    def __init__(self) -> None:
        self.fail = False

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors, _ = await self.embed_counted(texts)
        return vectors

    async def embed_counted(self, texts: Sequence[str]) -> tuple[list[list[float]], int]:
        if self.fail:
            raise EmbeddingError("down", transient=True)
        return [[1.0, 0.0, 0.0] for _ in texts], sum(len(t.split()) for t in texts)


async def test_embeddings_are_rows_for_an_archive_or_a_search(
    client: httpx.AsyncClient, database: Database, admin_database: Database, tenant: TenantKeys
) -> None:
    recorder = UsageRecorder(database)
    inner = CountedEmbedder()
    embedder = MeteredEmbedder(inner, model="embed-small", sink=recorder.record)
    created = await client.post("/v1/sessions", json={}, headers=tenant.write)
    session = uuid.UUID(created.json()["id"])
    with calls_for(tenant.tenant_id, session, 1):
        assert len(await embedder.embed(["green tea", "black coffee please"])) == 2
    with calls_for(tenant.tenant_id):
        await embedder.embed(["tea"])
        inner.fail = True
        with pytest.raises(EmbeddingError):
            await embedder.embed(["tea"])
    before = dropped("no_tenant")
    TENANT_ID.set(None)  # the in-process request above named its tenant in this context
    with pytest.raises(EmbeddingError):
        await embedder.embed(["nobody's"])
    assert dropped("no_tenant") == before + 1
    await recorder.flush()
    assert await stored(admin_database, tenant.tenant_id) == [
        ("embedding", "embed-small", 5, 0, "ok", session, 1),
        ("query_embedding", "embed-small", 1, 0, "ok", None, None),
        ("query_embedding", "embed-small", 0, 0, "error", None, None),
    ]
    # Deleting the agent session keeps the row for the bill and forgets the agent session.
    deleted = await client.delete(f"/v1/sessions/{session}", headers=tenant.write)
    assert deleted.status_code == 204, deleted.text
    assert (await stored(admin_database, tenant.tenant_id))[0] == (
        "embedding",
        "embed-small",
        5,
        0,
        "ok",
        None,
        1,
    )


async def test_a_batch_that_cannot_be_written_is_counted_and_the_others_are_written(
    database: Database, admin_database: Database, tenant: TenantKeys
) -> None:
    recorder = UsageRecorder(database)
    before = dropped("write_failed")
    recorder.record(row(uuid.uuid4()))  # no such tenant: its insert fails
    recorder.record(row(tenant.tenant_id))
    assert await recorder.flush() == 1
    assert dropped("write_failed") == before + 1
    assert len(await stored(admin_database, tenant.tenant_id)) == 1


@pytest.mark.parametrize(("capacity", "kept"), [(1, 1), (2, 2), (3, 2)])
async def test_a_full_queue_drops_the_row_and_counts_it(
    database: Database, capacity: int, kept: int
) -> None:
    recorder = UsageRecorder(database, capacity=capacity)
    before = dropped("queue_full")
    tenant_id = uuid.uuid4()
    recorder.record(row(tenant_id))
    recorder.record(row(tenant_id))
    assert recorder.queued == kept
    assert dropped("queue_full") == before + 2 - kept


async def test_the_report_adds_up_each_tenants_own_calls_by_day_and_model(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    other = await make_tenant(database, "other")
    recorder = UsageRecorder(database, batch=2)
    now = datetime.now(UTC)
    yesterday = now - timedelta(days=1)
    recorder.record(row(tenant.tenant_id, at=yesterday, latency_ms=100))
    recorder.record(row(tenant.tenant_id, at=now, latency_ms=100))
    recorder.record(row(tenant.tenant_id, at=now, latency_ms=201, outcome="error", input_tokens=0))
    recorder.record(row(tenant.tenant_id, at=now, model="embed", purpose="embedding"))
    recorder.record(row(other.tenant_id, at=now, input_tokens=9999))
    await recorder.close()
    assert recorder.queued == 0
    answer = await client.get("/v1/usage/models", headers=tenant.headers(tenant.admin))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    days = (yesterday.date().isoformat(), now.date().isoformat())
    assert [(item["day"], item["model"], item["calls"]) for item in body["items"]] == [
        (days[0], "gpt-row", 1),
        (days[1], "embed", 1),
        (days[1], "gpt-row", 2),
    ]
    today = body["items"][2]
    assert (today["errors"], today["input_tokens"], today["output_tokens"]) == (1, 100, 20)
    assert today["mean_latency_ms"] == 150
    assert body["totals"] == {
        "calls": 4,
        "errors": 1,
        "refused": 0,
        "input_tokens": 300,
        "output_tokens": 40,
    }
    for key in (tenant.writer, tenant.reader):
        refused = await client.get("/v1/usage/models", headers=tenant.headers(key))
        assert refused.status_code == 403, refused.text


async def test_erasing_a_user_keeps_the_bill_and_forgets_the_agent_session(
    client: httpx.AsyncClient, database: Database, admin_database: Database, tenant: TenantKeys
) -> None:
    created = await client.post("/v1/sessions", json={"user_id": "erin"}, headers=tenant.write)
    session = uuid.UUID(created.json()["id"])
    recorder = UsageRecorder(database)
    recorder.record(row(tenant.tenant_id, scope=CallScope(tenant.tenant_id, session, 1)))
    await recorder.close()
    assert [found[5] for found in await stored(admin_database, tenant.tenant_id)] == [session]
    erased = await client.delete("/v1/users/erin", headers=tenant.headers(tenant.admin))
    assert erased.status_code == 200, erased.text
    assert "model_calls" not in erased.text
    assert await stored(admin_database, tenant.tenant_id) == [
        ("wm_update", "gpt-row", 100, 10, "ok", None, 1)
    ]
