"""The real ``workmem serve`` process on a free loopback port, and the ports tests need."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.clusters import register


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
                self.log.flush()
                stderr = self.log_text().strip().splitlines()[-20:]
                raise AssertionError(f"serve exited early: {self.lines} {stderr}")
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


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
