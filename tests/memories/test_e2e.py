"""Long-term memory end to end: the real ``workmem serve`` process, its worker and its HTTP API."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.servers import Server

pytestmark = pytest.mark.e2e


def test_commit_search_recall_and_forget_against_the_real_server(tmp_path: Path) -> None:
    server = Server(tmp_path / "home")
    try:
        server.wait_ready()
        key = (tmp_path / "home" / "local-api-key").read_text().strip()
        with httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as http:
            agent_session_id = http.post("/v1/sessions", json={"user_id": "zoe"}).json()["id"]
            batch = [
                {"role": "user", "content": "Hi! My favorite book is Dune."},
                {"role": "assistant", "content": "A classic."},
                {"role": "user", "content": "I moved to Lisbon last month."},
                {"role": "assistant", "content": "Welcome to Portugal!"},
            ]
            appended = http.post(
                f"/v1/sessions/{agent_session_id}/messages:batch", json={"messages": batch}
            )
            assert appended.status_code == 201, appended.text
            committed = http.post(
                f"/v1/sessions/{agent_session_id}/commit",
                json={"keep_recent_count": 0, "wait": True},
            ).json()
            assert committed["status"] == "done", committed
            assert committed["archive"]["memories"]["added"] == 2
            assert [m["event"] for m in committed["working_memory"]["produced_memories"]] == [
                "ADD",
                "ADD",
            ]

            found = http.get("/v1/memories/search", params={"q": "which book does she like"})
            [hit] = found.json()["items"]
            assert hit["content"] == "My favorite book is Dune."
            assert hit["source_seqs"] == [1]

            http.post(
                f"/v1/sessions/{agent_session_id}/messages",
                json={"role": "user", "content": "Any reading tips?"},
            )
            context = http.get(
                f"/v1/sessions/{agent_session_id}/context", params={"recall": "favorite book"}
            ).json()
            assert context["messages"][1]["content"].startswith("[Relevant Memories]")
            assert "My favorite book is Dune." in context["messages"][1]["content"]

            assert http.delete(f"/v1/memories/{hit['id']}").status_code == 204
            trail = http.get(f"/v1/memories/{hit['id']}/events").json()["items"]
            assert [e["event"] for e in trail] == ["ADD", "DELETE"]
            assert trail[0]["new_content"] is None
            assert http.get("/v1/memories/search", params={"q": "favorite book"}).json() == {
                "items": [],
                "embedding_model": "hashing:v1:384",
                "min_score": 0.1,
            }
    finally:
        log = server.stop()
    assert '"level": "error"' not in log
