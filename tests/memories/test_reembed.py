"""``workmem memories reembed``: a tenant's memories move to the configured embedder, resumably."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import text

from app.db import Database
from app.memories.embedding import EmbeddingError
from app.memories.jobs import MemoryJobService
from app.memories.openai_embedder import OpenAIEmbedder
from app.memories.reembed import reembed
from tests.conftest import AppFactory, TenantKeys
from tests.memories.helpers import memories, new_session, rows, state
from tests.support.fake_openai import EmbeddingReply, ErrorReply, FakeOpenAI

FACTS = (
    "My favorite color is teal.",
    "I work as a nurse at the city hospital.",
    "I have a dog named Biscuit.",
    "I went to a pottery class last Saturday.",
)


def target(fake: FakeOpenAI) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        base_url=fake.base_url,
        api_key="test-key",
        model="fake-embed",
        dim=384,
        dimensions=384,
        max_retries=0,
    )


async def models(database: Database, keys: TenantKeys) -> list[str]:
    found = await rows(
        database,
        "SELECT embedding_model FROM memories WHERE tenant_id = :tenant_id ORDER BY memory_id",
        tenant_id=keys.tenant_id,
    )
    return [row["embedding_model"] for row in found]


async def test_reembed_is_resumable_and_touches_one_tenant(
    database: Database,
    tenant: TenantKeys,
    other_tenant: TenantKeys,
    fake_openai: FakeOpenAI,
    app_client: AppFactory,
) -> None:
    async with app_client(database) as http:
        for keys in (tenant, other_tenant):
            await state(http, keys, await new_session(http, keys, "ivy"), *FACTS)
    embedder = target(fake_openai)
    fake_openai.push_embeddings(EmbeddingReply(size=384), ErrorReply(400))
    with pytest.raises(EmbeddingError):
        await reembed(database, embedder, tenant.tenant_id, batch_size=2)
    assert (
        sorted(await models(database, tenant))
        == ["hashing:v1:384"] * 2 + ["openai:fake-embed:384"] * 2
    )

    totals: list[int] = []
    steps: list[int] = []
    report = await reembed(
        database,
        embedder,
        tenant.tenant_id,
        batch_size=2,
        started=totals.append,
        advanced=steps.append,
    )
    assert (report.stale, report.reembedded, report.changed_meanwhile) == (2, 2, 0)
    assert (totals, steps) == ([2], [2])
    assert set(await models(database, tenant)) == {"openai:fake-embed:384"}
    assert set(await models(database, other_tenant)) == {"hashing:v1:384"}
    again = await reembed(database, embedder, tenant.tenant_id, batch_size=2)
    assert (again.stale, again.reembedded) == (0, 0)
    await embedder.close()


async def test_a_memory_changed_between_read_and_write_keeps_its_vector_for_the_next_run(
    database: Database, tenant: TenantKeys, app_client: AppFactory
) -> None:
    async with app_client(database) as http:
        await state(http, tenant, await new_session(http, tenant, "jo"), FACTS[0])
        [memory] = await memories(http, tenant.reader)
    async with database.tenant(tenant.tenant_id) as db:
        stale = await MemoryJobService(db, tenant.tenant_id).stale(
            "other:model:384", after=None, limit=10
        )
    assert [content for _, content in stale] == [FACTS[0]]
    async with database.tenant(tenant.tenant_id) as db:
        await db.execute(
            text("UPDATE memories SET content = 'My favorite color is navy.' WHERE memory_id = :m"),
            {"m": memory["id"]},
        )
    async with database.tenant(tenant.tenant_id) as db:
        written = await MemoryJobService(db, tenant.tenant_id).store_embeddings(
            stale, [[0.1] * 384], "other:model:384"
        )
    assert written == 0
    assert await models(database, tenant) == ["hashing:v1:384"]


def workmem() -> list[str]:
    script = Path(sys.executable).parent / "workmem"
    return [str(script)] if script.exists() else [sys.executable, "-m", "app.cli"]


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


async def run(command: list[str], env: dict[str, str]) -> Ran:
    process = await asyncio.create_subprocess_exec(
        *command, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    stdout, stderr = await process.communicate()
    assert process.returncode is not None
    return Ran(process.returncode, stdout.decode(), stderr.decode())


async def test_the_command_reports_and_refuses_a_mismatched_embedder(
    database: Database,
    database_url: str,
    tenant: TenantKeys,
    fake_openai: FakeOpenAI,
    app_client: AppFactory,
) -> None:
    async with app_client(database) as http:
        await state(http, tenant, await new_session(http, tenant, "kim"), *FACTS)
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "WORKMEM_EMBEDDING_PROVIDER": "openai",
        "WORKMEM_EMBEDDING_BASE_URL": fake_openai.base_url,
        "WORKMEM_EMBEDDING_API_KEY": "test-key",
        "WORKMEM_EMBEDDING_MODEL": "fake-embed",
        "WORKMEM_EMBEDDING_DIMENSIONS": "384",
    }
    command = [*workmem(), "memories", "reembed", "--tenant", str(tenant.tenant_id)]
    done = await run(command, env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "re-embedding" not in done.stderr, "no bar where the output is a pipe"
    assert report == {
        "tenant_id": str(tenant.tenant_id),
        "embedding_model": "openai:fake-embed:384",
        "stale": len(FACTS),
        "reembedded": len(FACTS),
        "changed_meanwhile": 0,
    }
    assert set(await models(database, tenant)) == {"openai:fake-embed:384"}
    # What the embedding calls cost is recorded before the command ends (the scripted server
    # counts an input's words as its tokens).
    billed = await rows(
        database,
        "SELECT purpose, model, sum(input_tokens) AS tokens, bool_and(outcome = 'ok') AS ok"
        " FROM model_calls WHERE tenant_id = :tenant_id GROUP BY 1, 2",
        tenant_id=tenant.tenant_id,
    )
    assert [dict(row) for row in billed] == [
        {
            "purpose": "embedding",
            "model": "fake-embed",
            "tokens": sum(len(fact.split()) for fact in FACTS),
            "ok": True,
        }
    ]

    refused = await run(command, {**env, "WORKMEM_EMBEDDING_DIMENSIONS": "256"})
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "workmem: the embedder openai:fake-embed:256 produces 256-dimensional vectors, but the "
        "memories.embedding column is vector(384) (fixed by WORKMEM_EMBEDDING_DIM when the "
        "migration ran); configure an embedder of 384 dimensions"
    ]
    fake_openai.push_embeddings(ErrorReply(503))
    down = await run(
        command,
        {**env, "WORKMEM_EMBEDDING_MODEL": "fake-embed-2", "WORKMEM_EMBEDDING_MAX_RETRIES": "0"},
    )
    assert down.returncode == 1
    assert down.stderr.strip().splitlines()[-1] == (
        "workmem: re-embedding stopped: embeddings endpoint failed (HTTP 503); run the command "
        "again to go on"
    )
    assert "Traceback" not in down.stderr
