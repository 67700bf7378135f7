"""End to end: the real `workmem serve` process on its own embedded database and a free port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.clusters import cluster_url, register

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def workmem_command() -> list[str]:
    script = Path(sys.executable).parent / "workmem"
    return [str(script)] if script.exists() else [sys.executable, "-m", "app.cli"]


class Server:
    def __init__(self, home: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.home = home
        register(home / "pgdata")
        self.port = free_port()
        environment = {
            k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "WORKMEM_DATABASE_URL")
        }
        environment.update({"WORKMEM_HOME": str(home), "WORKMEM_LOG_JSON": "true"})
        environment.update(env or {})
        self.log = (home.parent / f"serve-{self.port}.log").open("w")
        self.process = subprocess.Popen(
            [*workmem_command(), "serve", "--port", str(self.port), *extra],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        self.lines: list[str] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout_s: float = 90) -> None:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line:
                self.lines.append(line.strip())
            if "serving on" in line:
                break
            if self.process.poll() is not None:
                raise AssertionError(f"serve exited early: {self.lines}")
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base_url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"server not ready: {self.lines}")

    def stop(self) -> str:
        """Send SIGTERM and return the server's log once it has exited."""
        code = self.end(signal.SIGTERM)
        # uvicorn re-raises the signal after a graceful shutdown, so -SIGTERM is a clean exit.
        assert code in (0, -signal.SIGTERM), code
        return self.log_text()

    def end(self, signum: int, timeout_s: float = 60) -> int:
        """Send ``signum``; the exit status, once the process has exited."""
        self.process.send_signal(signum)
        try:
            return self.process.wait(timeout=timeout_s)
        finally:
            self.log.close()
            if self.process.stdout is not None:
                self.process.stdout.close()

    def log_text(self) -> str:
        return (self.home.parent / f"serve-{self.port}.log").read_text()


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
