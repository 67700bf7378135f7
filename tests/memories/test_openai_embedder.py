"""The ``openai`` embedder through the real SDK against the local OpenAI-compatible server."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from asgi_lifespan import LifespanManager
from pydantic import SecretStr

from app.config import Settings
from app.db import Database
from app.main import create_app
from app.memories.embedding import EmbeddingError
from app.memories.hashing import HashingEmbedder
from app.memories.openai_embedder import OpenAIEmbedder
from app.wiring import EmbedderMismatch, build_embedder
from tests.conftest import AppFactory, TenantKeys
from tests.memories.helpers import memories, new_session, search, state
from tests.support.fake_openai import EmbeddingReply, ErrorReply, FakeOpenAI, RawReply


def embedder(fake: FakeOpenAI, **overrides: Any) -> OpenAIEmbedder:
    options: dict[str, Any] = {
        "base_url": fake.base_url,
        "api_key": "test-key",
        "model": "fake-embed",
        "dim": 384,
        "dimensions": 384,
        "max_retries": 0,
        **overrides,
    }
    return OpenAIEmbedder(**options)


def bodies(fake: FakeOpenAI) -> list[dict[str, Any]]:
    return [r.body for r in fake.requests if r.path.startswith("/v1/embeddings")]


async def test_dimensions_are_sent_and_float_vectors_come_back(fake_openai: FakeOpenAI) -> None:
    client = embedder(fake_openai)
    vectors = await client.embed(["I love creating art", "I love creating art", "tea"])
    await client.close()
    assert [len(v) for v in vectors] == [384, 384, 384]
    assert vectors[0] == vectors[1] != vectors[2]
    assert math.isclose(math.sqrt(sum(x * x for x in vectors[0])), 1.0, rel_tol=1e-6)
    [body] = bodies(fake_openai)
    assert body == {
        "model": "fake-embed",
        "input": ["I love creating art", "I love creating art", "tea"],
        "dimensions": 384,
        "encoding_format": "float",
    }
    assert client.identity == "openai:fake-embed:384"
    assert client.dim == 384
    assert repr(client) == "OpenAIEmbedder(model='fake-embed', dim=384)"


async def test_without_dimensions_the_model_s_own_size_must_be_the_column_s() -> None:
    with FakeOpenAI(embedding_dim=384) as fake:
        client = embedder(fake, dimensions=None)
        [vector] = await client.embed(["hello there"])
        assert len(vector) == 384
        assert "dimensions" not in bodies(fake)[0]
        fake.push_embeddings(EmbeddingReply(size=1536))
        with pytest.raises(EmbeddingError, match=r"returned 1536-dimensional vectors.*stores 384"):
            await client.embed(["hello there"])
        await client.close()


async def test_large_inputs_go_in_batches(fake_openai: FakeOpenAI) -> None:
    client = embedder(fake_openai)
    vectors = await client.embed([f"text number {n}" for n in range(300)])
    await client.close()
    assert len(vectors) == 300
    assert [len(body["input"]) for body in bodies(fake_openai)] == [128, 128, 44]


async def test_a_rate_limit_is_retried_by_the_sdk(fake_openai: FakeOpenAI) -> None:
    fake_openai.push_embeddings(ErrorReply(429, retry_after_s=0.01))
    client = embedder(fake_openai, max_retries=2)
    [vector] = await client.embed(["retry me"])
    await client.close()
    assert len(vector) == 384
    assert [r.status for r in fake_openai.requests] == [429, 200]


@pytest.mark.parametrize(
    ("reply", "transient", "message"),
    [
        (ErrorReply(400), False, "embeddings endpoint rejected the call (HTTP 400)"),
        (ErrorReply(401), False, "embeddings endpoint rejected the call (HTTP 401)"),
        (ErrorReply(503), True, "embeddings endpoint failed (HTTP 503)"),
        (
            RawReply(200, b"{not json"),
            False,
            "the embeddings endpoint returned a body that is not JSON",
        ),
        (RawReply(200, b'{"object": "list", "data": []}'), False, "did not return 1 vectors"),
        (
            RawReply(200, json.dumps({"data": [{"index": 0, "embedding": ["a"]}]}).encode()),
            False,
            "a vector that is not floats",
        ),
        (
            RawReply(200, json.dumps({"data": [{"index": 5, "embedding": [0.0] * 384}]}).encode()),
            False,
            "wrong indexes",
        ),
    ],
)
async def test_failures_become_embedding_errors(
    fake_openai: FakeOpenAI, reply: ErrorReply | RawReply, transient: bool, message: str
) -> None:
    fake_openai.push_embeddings(reply)
    client = embedder(fake_openai)
    with pytest.raises(EmbeddingError) as raised:
        await client.embed(["x y z"])
    await client.close()
    assert message in raised.value.message
    assert raised.value.transient is transient
    assert "test-key" not in str(raised.value)


async def test_an_unreachable_endpoint_is_transient() -> None:
    client = OpenAIEmbedder(
        base_url="http://127.0.0.1:9/v1", api_key="k", model="m", dim=8, max_retries=0
    )
    with pytest.raises(EmbeddingError, match="could not reach") as raised:
        await client.embed(["x"])
    await client.close()
    assert raised.value.transient


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="api_key"):
        OpenAIEmbedder(base_url="http://x", api_key="", model="m", dim=8)
    with pytest.raises(ValueError, match="model"):
        OpenAIEmbedder(base_url="http://x", api_key="k", model="", dim=8)
    with pytest.raises(ValueError, match="dimensions"):
        OpenAIEmbedder(base_url="http://x", api_key="k", model="m", dim=8, dimensions=4)


def openai_settings(settings: Settings, fake: FakeOpenAI, **overrides: Any) -> dict[str, Any]:
    return {
        "embedding_provider": "openai",
        "embedding_base_url": fake.base_url,
        "embedding_api_key": SecretStr("test-key"),
        "embedding_model": "fake-embed",
        "embedding_dimensions": 384,
        "embedding_max_retries": 0,
        **overrides,
    }


@pytest.mark.parametrize(
    ("overrides", "produces"),
    [
        ({"embedding_dimensions": 256}, "openai:fake-embed:256 produces 256-dimensional"),
        ({"embedding_provider": "hashing", "embedding_dim": 512}, "hashing:v1:512 produces 512"),
    ],
)
async def test_a_dimension_mismatch_is_refused_at_start_with_both_named(
    settings: Settings,
    database: Database,
    fake_openai: FakeOpenAI,
    overrides: dict[str, Any],
    produces: str,
) -> None:
    chosen = settings.model_copy(update=openai_settings(settings, fake_openai, **overrides))
    app = create_app(chosen, database=database)
    with pytest.raises(EmbedderMismatch) as raised:
        async with LifespanManager(app):
            pass  # pragma: no cover - the lifespan refuses to start
    assert produces in str(raised.value)
    assert "memories.embedding column is vector(384)" in str(raised.value)
    assert build_embedder(chosen).dim != 384


async def test_memories_are_embedded_and_searched_by_the_configured_embedder(
    settings: Settings,
    database: Database,
    tenant: TenantKeys,
    fake_openai: FakeOpenAI,
    app_client: AppFactory,
) -> None:
    async with app_client(database, **openai_settings(settings, fake_openai)) as http:
        agent_session_id = await new_session(http, tenant, "gil")
        archive = await state(
            http, tenant, agent_session_id, "My favorite color is teal.", "I live in Porto."
        )
        assert archive["memories"]["added"] == 2
        stored = await memories(http, tenant.reader)
        assert {m["embedding_model"] for m in stored} == {"openai:fake-embed:384"}
        found = await search(http, tenant.reader, "favorite color teal")
        assert found[0]["content"] == "My favorite color is teal."
        assert found[0]["embedding_model"] == "openai:fake-embed:384"
    # Vectors of another embedder are never compared with these.
    async with app_client(database) as http:
        assert await search(http, tenant.reader, "favorite color teal", min_score=-1) == []
    assert len(bodies(fake_openai)) == 2


async def test_a_failed_embedding_is_reported_apart_from_zero_memories(
    settings: Settings,
    database: Database,
    tenant: TenantKeys,
    fake_openai: FakeOpenAI,
    app_client: AppFactory,
) -> None:
    async with app_client(database, **openai_settings(settings, fake_openai)) as http:
        agent_session_id = await new_session(http, tenant, "hal")
        nothing = await state(http, tenant, agent_session_id, "Hello!")
        fake_openai.push_embeddings(ErrorReply(400))
        failed = await state(http, tenant, agent_session_id, "My favorite color is teal.")
        working_memory = await http.get(
            f"/v1/sessions/{agent_session_id}/working-memory", headers=tenant.read
        )
    assert nothing["status"] == failed["status"] == "done"
    assert nothing["memories"]["failed"] is None
    assert (nothing["memories"]["added"], nothing["memories"]["skipped"]) == (0, {"chit_chat": 1})
    assert failed["memories"]["failed"] == {
        "stage": "embed",
        "error": "embeddings endpoint rejected the call (HTTP 400)",
    }
    assert failed["memories"]["added"] == 0
    assert failed["error_stage"] is None
    # The working memory went on regardless.
    assert working_memory.json()["archive_seq"] == 2
    assert "teal" in working_memory.json()["markdown"]


def test_the_hashing_embedder_is_the_default(settings: Settings) -> None:
    assert isinstance(build_embedder(settings), HashingEmbedder)
    assert build_embedder(settings).identity == "hashing:v1:384"


async def test_a_search_while_the_embedder_is_down_is_a_503(
    settings: Settings,
    database: Database,
    tenant: TenantKeys,
    fake_openai: FakeOpenAI,
    app_client: AppFactory,
) -> None:
    async with app_client(database, **openai_settings(settings, fake_openai)) as http:
        fake_openai.push_embeddings(ErrorReply(503))
        response = await http.get("/v1/memories/search", params={"q": "teal"}, headers=tenant.read)
    assert response.status_code == 503
    assert response.json()["type"] == "unavailable"
    assert "HTTP 503" in response.json()["detail"]
