"""End to end: the real `workmem serve` process on its own embedded database and a free port."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.support.clusters import cluster_url
from tests.support.servers import Server

pytestmark = pytest.mark.e2e


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_serve_creates_a_key_and_serves_agent_sessions(home: Path) -> None:
    server = Server(home)
    try:
        server.wait_ready()
        key_line = next(line for line in server.lines if "API key" in line)
        key_file = Path(key_line.rsplit(" ", 1)[-1])
        assert key_file.parent == home
        key = key_file.read_text().strip()
        assert oct(key_file.stat().st_mode & 0o777) == "0o600"
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=10) as http:
            created = http.post("/v1/sessions", json={"external_id": "e2e"})
            assert created.status_code == 201, created.text
            agent_session_id = created.json()["id"]
            for text in ("hello", "how are you?"):
                appended = http.post(
                    f"/v1/sessions/{agent_session_id}/messages",
                    json={"role": "user", "content": text},
                )
                assert appended.status_code == 201
            read = http.get(f"/v1/sessions/{agent_session_id}/messages").json()["items"]
            assert [m["message"]["content"] for m in read] == ["hello", "how are you?"]
            assert http.get("/healthz").json() == {"status": "ok"}
            exposed = http.get("/metrics")
            assert exposed.status_code == 200, "no redirect: /metrics answers itself"
            assert "workmem_http_requests_total" in exposed.text
    finally:
        log = server.stop()
    assert "Application shutdown complete" in log
    assert key not in log

    # Restart on the same home: the data and the key survive.
    again = Server(home)
    try:
        again.wait_ready()
        assert key_file.read_text().strip() == key
        with httpx.Client(base_url=again.base_url, headers=headers, timeout=10) as http:
            listed = http.get("/v1/sessions", params={"external_id": "e2e"}).json()["items"]
            assert [item["message_count"] for item in listed] == [2]
    finally:
        again.stop()


def test_serve_with_two_workers_runs_one_archive_worker(home: Path) -> None:
    """Two server processes answer; only the one holding the advisory lock processes archives."""
    import psycopg

    server = Server(home, "--workers", "2")
    try:
        server.wait_ready()
        key = (home / "local-api-key").read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=10) as http:
            agent_session_id = http.post("/v1/sessions", json={}).json()["id"]
            for round_ in range(3):
                http.post(
                    f"/v1/sessions/{agent_session_id}/messages",
                    json={"role": "user", "content": f"round {round_}: fix app/main.py"},
                )
                accepted = http.post(
                    f"/v1/sessions/{agent_session_id}/commit", json={"keep_recent_count": 0}
                )
                assert accepted.status_code == 202, accepted.text
            deadline = time.monotonic() + 60
            statuses: list[str] = []
            while time.monotonic() < deadline:
                listed = http.get(f"/v1/sessions/{agent_session_id}/archives").json()["items"]
                statuses = [archive["status"] for archive in listed]
                if statuses == ["done"] * 3:
                    break
                time.sleep(0.2)
            assert statuses == ["done"] * 3, "the in-process worker of one process finishes them"
        with psycopg.connect(
            cluster_url(home / "pgdata", "workmem"), autocommit=True
        ) as connection:
            holders = connection.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
                " WHERE l.locktype = 'advisory' AND l.granted AND a.usename = 'workmem_app'"
            ).fetchone()
        assert holders == (1,)
        assert len(children(server.process.pid)) >= 2, "two server processes"
    finally:
        server.stop()


def test_pins_sources_clearing_and_history_search_through_the_real_server(home: Path) -> None:
    """The features of DESIGN 18 through ``workmem serve``: a pin of a message's exact text in
    every context after the summary, each item's sources in the working memory, an older tool
    result cleared, and history search finding an archived message by its path."""
    server = Server(home)
    try:
        server.wait_ready()
        key_line = next(line for line in server.lines if "API key" in line)
        key = Path(key_line.rsplit(" ", 1)[-1]).read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as http:
            sid = http.post("/v1/sessions", json={"external_id": "features"}).json()["id"]
            call = {"id": "c1", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
            messages = [
                {"role": "user", "content": "Fix app/models/user.py. Never touch the migrations."},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "class User:\n    pass\n" * 80},
                {"role": "assistant", "content": "User has no email field; adding it."},
            ]
            batch = http.post(f"/v1/sessions/{sid}/messages:batch", json={"messages": messages})
            assert batch.status_code == 201, batch.text
            pinned = http.post(f"/v1/sessions/{sid}/pins", json={"message_seq": 1})
            assert pinned.status_code == 201, pinned.text
            done = http.post(
                f"/v1/sessions/{sid}/commit", json={"keep_recent_count": 0, "wait": True}
            )
            assert done.json()["status"] == "done", done.text
            sources = done.json()["working_memory"]["sources"]
            assert any(entry["seqs"] for entries in sources.values() for entry in entries)
            follow_up = [
                {"role": "user", "content": "Run the tests"},
                {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "c2"}]},
                {"role": "tool", "tool_call_id": "c2", "content": "FAILED test_user\n" * 80},
                {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "c3"}]},
                {"role": "tool", "tool_call_id": "c3", "content": "3 passed"},
                {"role": "user", "content": "Good?"},
            ]
            http.post(f"/v1/sessions/{sid}/messages:batch", json={"messages": follow_up})
            context = http.get(
                f"/v1/sessions/{sid}/context",
                params={"token_budget": 8_000, "clear_tool_results": 1},
            ).json()
            assert context["messages"][1]["content"].startswith("[Pinned]")
            assert "Never touch the migrations." in context["messages"][1]["content"]
            assert context["stats"]["clearing"]["cleared_seqs"] == [7]
            assert context["stats"]["clearing"]["tokens_saved"] > 0
            assert "/history/search?q=" in context["system_prompt_addition"]
            found = http.get(
                f"/v1/sessions/{sid}/history/search", params={"q": "app/models/user.py"}
            ).json()["items"]
            assert [(hit["seq"], hit["archive_seq"]) for hit in found] == [(1, 1)]
    finally:
        server.stop()
