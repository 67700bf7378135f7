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


def test_a_changed_preference_and_a_move_supersede_against_the_real_server(
    tmp_path: Path,
) -> None:
    server = Server(tmp_path / "home")
    try:
        server.wait_ready()
        key = (tmp_path / "home" / "local-api-key").read_text().strip()
        with httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as http:
            agent_session_id = http.post("/v1/sessions", json={"user_id": "ana"}).json()["id"]

            def say(*texts: str) -> dict[str, object]:
                for text in texts:
                    for role, content in (("user", text), ("assistant", "Noted.")):
                        response = http.post(
                            f"/v1/sessions/{agent_session_id}/messages",
                            json={"role": role, "content": content},
                        )
                        assert response.status_code == 201, response.text
                committed = http.post(
                    f"/v1/sessions/{agent_session_id}/commit",
                    json={"keep_recent_count": 0, "wait": True},
                ).json()
                assert committed["status"] == "done", committed
                memories: dict[str, object] = committed["archive"]["memories"]
                return memories

            first = say(
                "I prefer tabs over spaces.", "I live in Berlin.", "I have a dog back home."
            )
            assert first["added"] == 3
            changed = say(
                "I prefer spaces over tabs now.",
                "I live in Munich now.",
                "I have a cat at home as well.",
            )
            # The preference and the home changed; a second pet is no change of the first.
            assert (changed["added"], changed["superseded"]) == (1, 2)

            def search(q: str, **params: str) -> list[dict[str, object]]:
                found = http.get("/v1/memories/search", params={"q": q, "user_id": "ana", **params})
                assert found.status_code == 200, found.text
                items: list[dict[str, object]] = found.json()["items"]
                return items

            assert [hit["content"] for hit in search("tabs or spaces")] == [
                "I prefer spaces over tabs now."
            ]
            assert [hit["content"] for hit in search("where does she live")] == [
                "I live in Munich now."
            ]
            history = search("tabs or spaces", include_superseded="true")
            old = next(hit for hit in history if hit["content"] == "I prefer tabs over spaces.")
            assert old["superseded_by"] is not None
            assert len(search("dog or cat")) == 2

            withdrawn = say("I no longer live in Munich.")
            assert withdrawn["superseded"] == 1
            assert [hit["content"] for hit in search("where does she live")] == [
                "I no longer live in Munich."
            ]

            http.post(
                f"/v1/sessions/{agent_session_id}/messages",
                json={"role": "user", "content": "Set up my editor."},
            )
            context = http.get(
                f"/v1/sessions/{agent_session_id}/context", params={"recall": "tabs or spaces"}
            ).json()
            recalled = context["messages"][1]["content"]
            assert recalled.startswith("[Relevant Memories]")
            assert "I prefer spaces over tabs now." in recalled
            assert "I prefer tabs over spaces." not in recalled
    finally:
        log = server.stop()
    assert '"level": "error"' not in log
