"""Preparing against the real ``workmem serve`` process: an agent session left idle after its
appends is prepared by the server's own loop, its waiting commit resumes from it, and the
working memory it answers with is the one the generation from the start makes of the same
messages."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.archives.generation import WorkingMemoryGenerator
from app.archives.working_memory import WorkingMemory
from app.config import Settings
from app.wiring import guard_config
from tests.support.long_sessions import coding_session
from tests.support.servers import Server

pytestmark = pytest.mark.e2e

MAX_INPUT_TOKENS = 5_000


def counter(http: httpx.Client, name: str, labels: dict[str, str]) -> float:
    for family in text_string_to_metric_families(http.get("/metrics").text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


def test_an_idle_agent_session_is_prepared_and_its_commit_resumes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = Server(
        home,
        env={
            "WORKMEM_PREPARE_IDLE_S": "0.3",
            "WORKMEM_LLM_MAX_INPUT_TOKENS": str(MAX_INPUT_TOKENS),
        },
    )
    server.wait_ready()
    messages = coding_session(30)
    keep = 4
    try:
        key = (home / "local-api-key").read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=60) as http:
            session = http.post("/v1/sessions", json={"keep_recent_count": keep}).json()["id"]
            for start in range(0, len(messages), 40):
                appended = http.post(
                    f"/v1/sessions/{session}/messages:batch",
                    json={"messages": messages[start : start + 40]},
                )
                assert appended.status_code == 201, appended.text
            stored = {"outcome": "stored"}
            deadline = time.monotonic() + 60
            while counter(http, "workmem_archives_prepared_total", stored) < 1:
                assert time.monotonic() < deadline, "the idle agent session was never prepared"
                time.sleep(0.1)
            done = http.post(f"/v1/sessions/{session}/commit", json={"wait": True})
            assert done.status_code == 200, done.text
            assert done.json()["status"] == "done", done.text
            answered = done.json()["working_memory"]["sections"]
            resumed = counter(http, "workmem_archives_resumed_total", {"resumed": "yes"})
            assert resumed == 1
            archived = done.json()["archive"]["end_seq"]
    finally:
        server.stop()
    settings = Settings(llm_max_input_tokens=MAX_INPUT_TOKENS)
    generator = WorkingMemoryGenerator(
        None, max_input_tokens=MAX_INPUT_TOKENS, config=guard_config(settings)
    )
    cold = asyncio.run(generator.generate(WorkingMemory.empty(), messages[:archived]))
    assert answered == {section.value: body for section, body in cold.result.sections.items()}
