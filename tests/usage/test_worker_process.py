"""A ``workmem worker`` process beside ``workmem serve`` (whose own worker is off): the archives it
generates are billed (usage rows with the tokens the scripted model reported) and traced to an
OTLP collector, each archive a trace of its own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fake_openai import FakeOpenAI, ToolCallReply
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.servers import Server, workmem_command
from tests.support.spans import render, tree

pytestmark = pytest.mark.e2e


def poll(read: Any, done: Any) -> Any:
    deadline = time.monotonic() + 60
    while True:
        found = read()
        if done(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_a_worker_process_bills_and_traces_the_archives_it_generates(tmp_path: Path) -> None:
    markdown = "# Working Memory\n\n## Session Title\nTea\n\n## Current State\nTalking.\n"
    memory = {
        "category": "preference",
        "content": "The user prefers green tea.",
        "confidence": 0.9,
        "source_seqs": [1],
    }
    home = tmp_path / "home"
    with FakeOpenAI(embedding_dim=384) as model, OtlpReceiver() as collector:
        models = {
            "WORKMEM_LLM_PROVIDER": "openai",
            "WORKMEM_LLM_API_KEY": "test-key",
            "WORKMEM_LLM_BASE_URL": model.base_url,
            "WORKMEM_LLM_MODEL": "gpt-worker",
            "WORKMEM_LLM_MAX_RETRIES": "0",
            "WORKMEM_MEMORY_EXTRACTOR": "model",
            "WORKMEM_EMBEDDING_PROVIDER": "openai",
        }
        server = Server(home, env={**models, "WORKMEM_WORKER_ENABLED": "false"})
        worker: subprocess.Popen[str] | None = None
        try:
            server.wait_ready()
            worker = subprocess.Popen(
                [*workmem_command(), "worker"],
                env={
                    **os.environ,
                    **models,
                    "WORKMEM_HOME": str(home),
                    "WORKMEM_OTEL_ENDPOINT": collector.endpoint,
                    "WORKMEM_WORKER_POLL_S": "0.1",
                },
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert worker.stdout is not None
            assert "worker(s) started" in worker.stdout.readline()
            key = (home / "local-api-key").read_text().strip()
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
                        json.dumps({"markdown": markdown}), prompt_tokens=700, completion_tokens=50
                    ),
                    ToolCallReply(
                        json.dumps({"memories": [memory]}), prompt_tokens=200, completion_tokens=20
                    ),
                )
                committed = http.post(f"/v1/sessions/{sid}/commit", json={"keep_recent_count": 0})
                assert committed.status_code == 202, committed.text
                archive = poll(
                    lambda: http.get(f"/v1/sessions/{sid}/archives/1").json(),
                    lambda body: body["status"] == "done",
                )
                assert archive["status"] == "done", archive
                report = poll(
                    lambda: http.get("/v1/usage/models").json(),
                    lambda body: body["totals"]["calls"] >= 3,
                )
        finally:
            if worker is not None:
                worker.send_signal(signal.SIGTERM)  # what is buffered is exported as it stops
                _, errors = worker.communicate(timeout=60)
                assert worker.returncode == 0, errors
            server.stop()
        roots = tree(collector.spans)
    assert {
        (item["model"], item["input_tokens"], item["output_tokens"]) for item in report["items"]
    } == {
        ("gpt-worker", 900, 70),
        ("text-embedding-3-small", len(str(memory["content"]).split()), 0),
    }
    print(render(roots))  # noqa: T201 - the worker's trace
    assert [root.shape() for root in roots] == [
        (
            "workmem.archive.generate",
            [
                ("chat gpt-worker", []),
                ("chat gpt-worker", []),
                ("embeddings text-embedding-3-small", []),
            ],
        )
    ]
    assert roots[0].attributes["workmem.agent_session_id"] == sid
