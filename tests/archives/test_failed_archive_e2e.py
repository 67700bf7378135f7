"""A failed archive never wedges its session, against the real ``workmem serve`` process whose
model cannot be reached: through ``/v1`` and ``/api/v1``, every later commit is accepted, before
and after a restart; the failed archive's messages stay in the context, and it can be retried
or cleared."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.servers import Server, closed_port

pytestmark = pytest.mark.e2e


def _env() -> dict[str, str]:
    return {
        "WORKMEM_LLM_PROVIDER": "openai",
        "WORKMEM_LLM_API_KEY": "test-key",
        "WORKMEM_LLM_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1",
        "WORKMEM_LLM_FALLBACK": "none",
        "WORKMEM_LLM_MAX_RETRIES": "0",
        "WORKMEM_LLM_TIMEOUT_S": "5",
        "WORKMEM_MEMORY_EXTRACTOR": "off",
        "WORKMEM_WORKER_MAX_ATTEMPTS": "1",
        "WORKMEM_WORKER_POLL_S": "0.1",
    }


def _started(home: Path) -> Server:
    server = Server(home, env=_env())
    server.wait_ready()
    return server


def _v1_commit(http: httpx.Client, session: str) -> dict[str, Any]:
    response = http.post(
        f"/v1/sessions/{session}/commit", json={"keep_recent_count": 0, "wait": True}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _ov_commit(http: httpx.Client, session: str) -> dict[str, Any]:
    response = http.post(f"/api/v1/sessions/{session}/commit", json={"keep_recent_count": 0})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    assert result["status"] == "accepted", result
    deadline = time.monotonic() + 60
    while True:
        task = http.get(f"/api/v1/tasks/{result['task_id']}").json()["result"]
        if task["status"] in ("completed", "failed") or time.monotonic() > deadline:
            return {"task": task, "archived": result["archived"]}
        time.sleep(0.1)


def _v1_append(http: httpx.Client, session: str, text: str) -> None:
    response = http.post(f"/v1/sessions/{session}/messages", json={"role": "user", "content": text})
    assert response.status_code == 201, response.text


def _ov_append(http: httpx.Client, session: str, text: str) -> None:
    response = http.post(
        f"/api/v1/sessions/{session}/messages", json={"role": "user", "content": text}
    )
    assert response.status_code == 200, response.text


def test_a_failed_archive_never_wedges_a_session_even_after_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = _started(home)
    try:
        key = (home / "local-api-key").read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as http:
            created = http.post("/v1/sessions", json={"external_id": "native"})
            assert created.status_code == 201, created.text
            native = created.json()["id"]
            _v1_append(http, native, "first")
            first = _v1_commit(http, native)
            assert (first["status"], first["archive"]["archive_seq"]) == ("failed", 1)
            _v1_append(http, native, "second")
            assert _v1_commit(http, native)["archive"]["archive_seq"] == 2

            assert http.post("/api/v1/sessions", json={"session_id": "ov"}).status_code == 200
            _ov_append(http, "ov", "first")
            assert _ov_commit(http, "ov")["task"]["status"] == "failed"
            _ov_append(http, "ov", "second")
            assert _ov_commit(http, "ov")["task"]["status"] == "failed"
    finally:
        server.stop()

    again = _started(home)
    try:
        with httpx.Client(base_url=again.base_url, headers=headers, timeout=30) as http:
            _v1_append(http, native, "after the restart")
            third = _v1_commit(http, native)
            assert (third["status"], third["archive"]["archive_seq"]) == ("failed", 3)
            _ov_append(http, "ov", "after the restart")
            assert _ov_commit(http, "ov")["task"]["status"] == "failed"

            # Nothing is lost: every failed archive's messages are still in the context.
            context = http.get("/api/v1/sessions/ov/context").json()["result"]
            texts = [m["parts"][0]["text"] for m in context["messages"]]
            assert texts == ["first", "second", "after the restart"]
            assert context["stats"]["failedArchives"] == 3

            # The operator's action: a failed archive is queued again.
            retried = http.post(f"/v1/sessions/{native}/archives/1:retry")
            assert retried.status_code == 200, retried.text
            assert retried.json()["status"] in ("pending", "running", "failed")
            assert retried.json()["attempt"] in (0, 1)
            done = http.post(f"/v1/sessions/{native}/archives/9:retry")
            assert done.status_code == 404, done.text

            # Or set aside for good: cleared once, refused after, unknown ones 404.
            cleared = http.post(f"/v1/sessions/{native}/archives/3:clear")
            assert cleared.status_code == 200, cleared.text
            assert cleared.json()["status"] == "cleared"
            again_cleared = http.post(f"/v1/sessions/{native}/archives/3:clear")
            assert again_cleared.status_code == 409, again_cleared.text
            unknown = http.post(f"/v1/sessions/{native}/archives/9:clear")
            assert unknown.status_code == 404, unknown.text
            shown = http.get(f"/v1/sessions/{native}/archives/3")
            assert shown.json()["status"] == "cleared"
    finally:
        again.stop()
