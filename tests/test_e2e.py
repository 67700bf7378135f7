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
    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = free_port()
        env = {
            k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "WORKMEM_DATABASE_URL")
        }
        env.update({"WORKMEM_HOME": str(home), "WORKMEM_LOG_JSON": "true"})
        self.log = (home.parent / f"serve-{self.port}.log").open("w")
        self.process = subprocess.Popen(
            [*workmem_command(), "serve", "--port", str(self.port)],
            env=env,
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
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=30)
        finally:
            self.log.close()
            if self.process.stdout is not None:
                self.process.stdout.close()
        # uvicorn re-raises the signal after a graceful shutdown, so -SIGTERM is a clean exit.
        assert code in (0, -signal.SIGTERM), code
        return (self.home.parent / f"serve-{self.port}.log").read_text()


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
            assert "workmem_http_requests_total" in http.get("/metrics/").text
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
