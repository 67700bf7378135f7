"""A fork against the real ``workmem serve`` process: forked at archive 2 of a five-archive
agent session, the fork and its parent go on independently, and neither sees what the other
adds — in the messages, the context and history search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.servers import Server

pytestmark = pytest.mark.e2e


def _append(http: httpx.Client, session: str, text: str) -> None:
    response = http.post(f"/v1/sessions/{session}/messages", json={"role": "user", "content": text})
    assert response.status_code == 201, response.text


def _commit(http: httpx.Client, session: str) -> dict[str, Any]:
    response = http.post(
        f"/v1/sessions/{session}/commit", json={"keep_recent_count": 0, "wait": True}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["status"] == "done", body
    return body


def _contents(http: httpx.Client, session: str) -> list[str]:
    items = http.get(f"/v1/sessions/{session}/messages", params={"limit": 1000}).json()["items"]
    return [item["message"]["content"] for item in items]


def _search(http: httpx.Client, session: str, query: str) -> list[int]:
    response = http.get(f"/v1/sessions/{session}/history/search", params={"q": query})
    assert response.status_code == 200, response.text
    return [hit["seq"] for hit in response.json()["items"]]


def _context(http: httpx.Client, session: str) -> str:
    response = http.get(f"/v1/sessions/{session}/context", params={"fill": "true"})
    assert response.status_code == 200, response.text
    return "\n".join(str(message["content"]) for message in response.json()["messages"])


def test_a_fork_and_its_parent_go_on_independently(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = Server(home, env={"WORKMEM_MEMORY_EXTRACTOR": "off"})
    server.wait_ready()
    try:
        key = (home / "local-api-key").read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=60) as http:
            parent = http.post("/v1/sessions", json={}).json()["id"]
            for number in range(1, 6):
                _append(http, parent, f"Decision {number}: adopt library{number}.")
                _commit(http, parent)
            forked = http.post(f"/v1/sessions/{parent}:fork", json={"at_archive": 2})
            assert forked.status_code == 201, forked.text
            fork = forked.json()
            assert fork["lineage"] == {"parent_session_id": parent, "archive_seq": 2, "seq": 2}
            fork_id = fork["id"]
            assert http.get(f"/v1/sessions/{fork_id}").json()["lineage"]["seq"] == 2
            assert _contents(http, fork_id) == [
                "Decision 1: adopt library1.",
                "Decision 2: adopt library2.",
            ]
            assert "library2" in _context(http, fork_id)
            assert "library4" not in _context(http, fork_id)

            # Both go on.
            _append(http, fork_id, "Fork: switch to durian instead.")
            _append(http, parent, "Parent: keep going with elderberry.")
            fork_commit = _commit(http, fork_id)
            assert fork_commit["archive"]["archive_seq"] == 3
            assert fork_commit["archive"]["start_seq"] == 3
            _append(http, fork_id, "Fork later: feijoa.")
            _append(http, parent, "Parent later: guava.")

            assert _contents(http, fork_id)[2:] == [
                "Fork: switch to durian instead.",
                "Fork later: feijoa.",
            ]
            assert _contents(http, parent)[5:] == [
                "Parent: keep going with elderberry.",
                "Parent later: guava.",
            ]
            fork_context, parent_context = _context(http, fork_id), _context(http, parent)
            assert "durian" in fork_context
            assert "feijoa" in fork_context
            assert "library1" in fork_context
            assert "elderberry" not in fork_context
            assert "guava" not in fork_context
            assert "library5" not in fork_context
            assert "elderberry" in parent_context
            assert "guava" in parent_context
            assert "durian" not in parent_context
            assert "feijoa" not in parent_context

            assert _search(http, fork_id, "durian") == [3]
            assert _search(http, fork_id, "library1") == [1]
            assert _search(http, fork_id, "elderberry guava") == []
            assert _search(http, fork_id, "library4") == []
            assert _search(http, parent, "durian feijoa") == []
            assert _search(http, parent, "elderberry") == [6]

            fork_wm = http.get(f"/v1/sessions/{fork_id}/working-memory").json()
            parent_wm = http.get(f"/v1/sessions/{parent}/working-memory").json()
            assert fork_wm["archive_seq"] == 3
            assert "durian" in fork_wm["markdown"]
            assert "library5" not in fork_wm["markdown"]
            assert parent_wm["archive_seq"] == 5
            assert "durian" not in parent_wm["markdown"]

            # The parent stays while its fork exists.
            assert http.delete(f"/v1/sessions/{parent}").status_code == 409
            assert http.delete(f"/v1/sessions/{fork_id}").status_code == 204
            assert http.delete(f"/v1/sessions/{parent}").status_code == 204
    finally:
        server.stop()
