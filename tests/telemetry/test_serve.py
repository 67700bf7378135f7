"""Traces from the real ``workmem serve`` process to an OTLP collector (a local one): its chat
and embedding models the scripted OpenAI-compatible server, ``WORKMEM_OTEL_ENDPOINT`` set."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.support.fake_openai import FakeOpenAI, ToolCallReply
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.servers import Server
from tests.support.spans import render, tree

pytestmark = pytest.mark.e2e


def test_one_commit_is_a_trace_with_its_model_calls_and_their_tokens(tmp_path: Path) -> None:
    markdown = "# Working Memory\n\n## Session Title\nTea\n\n## Current State\nTalking.\n"
    memory: dict[str, object] = {
        "category": "preference",
        "content": "The user prefers green tea.",
        "confidence": 0.9,
        "source_seqs": [1],
    }
    with FakeOpenAI(embedding_dim=384) as model, OtlpReceiver() as collector:
        server = Server(
            tmp_path / "home",
            env={
                "WORKMEM_LLM_PROVIDER": "openai",
                "WORKMEM_LLM_API_KEY": "test-key",
                "WORKMEM_LLM_BASE_URL": model.base_url,
                "WORKMEM_LLM_MODEL": "gpt-4o-mini",
                "WORKMEM_LLM_MAX_RETRIES": "0",
                "WORKMEM_MEMORY_EXTRACTOR": "model",
                "WORKMEM_EMBEDDING_PROVIDER": "openai",
                "WORKMEM_OTEL_ENDPOINT": collector.endpoint,
            },
        )
        try:
            server.wait_ready()
            key = (server.home / "local-api-key").read_text().strip()
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=server.base_url, headers=headers, timeout=60) as http:
                sid = http.post("/v1/sessions", json={"external_id": "tea"}).json()["id"]
                said = http.post(
                    f"/v1/sessions/{sid}/messages",
                    json={"role": "user", "content": "I prefer green tea to coffee."},
                )
                assert said.status_code == 201, said.text
                model.push(
                    ToolCallReply(
                        json.dumps({"markdown": markdown}), prompt_tokens=812, completion_tokens=64
                    ),
                    ToolCallReply(
                        json.dumps({"memories": [memory]}), prompt_tokens=240, completion_tokens=31
                    ),
                )
                done = http.post(
                    f"/v1/sessions/{sid}/commit", json={"keep_recent_count": 0, "wait": True}
                )
                assert done.json()["status"] == "done", done.text
                assert http.get(f"/v1/sessions/{sid}/context", params={"recall": "tea"}).is_success
                assert http.get("/v1/memories/search", params={"q": "tea"}).is_success
        finally:
            server.stop()  # the spans still buffered are exported as the process stops
        roots = tree(collector.spans)
        metrics = collector.metrics
    print(render(roots))  # noqa: T201 - the span tree, for the docs
    assert [root.shape() for root in roots] == [
        ("workmem.append", []),
        (
            "workmem.commit",
            [
                (
                    "workmem.archive.generate",
                    [
                        ("chat gpt-4o-mini", []),
                        ("chat gpt-4o-mini", []),
                        ("embeddings text-embedding-3-small", []),
                    ],
                )
            ],
        ),
        ("embeddings text-embedding-3-small", []),
        ("workmem.context", [("retrieval workmem.memories", [])]),
        ("embeddings text-embedding-3-small", []),
        ("retrieval workmem.memories", []),
    ]
    create, extract, embed = roots[1].children[0].children
    assert (
        create.attributes["workmem.purpose"],
        create.attributes["gen_ai.usage.input_tokens"],
    ) == (
        "wm_create",
        812,
    )
    assert create.attributes["gen_ai.usage.output_tokens"] == 64
    assert extract.attributes["gen_ai.usage.output_tokens"] == 31
    assert embed.attributes["gen_ai.operation.name"] == "embeddings"
    assert embed.attributes["gen_ai.usage.input_tokens"] == len(str(memory["content"]).split())
    assert {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"} <= metrics
