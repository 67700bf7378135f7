"""A real browser and a real server for the /ui tests: Debian's Chromium driven by Playwright
(never a browser Playwright downloads), and ``workmem serve`` on a free loopback port."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from app.db import SERVICE_KEY_VARIABLE
from tests.support.servers import free_port, workmem_command

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def require_chromium() -> str:
    """The browser's path; skipped on a machine without it, a failure in CI (``CI=true``)."""
    if CHROMIUM.exists():
        return str(CHROMIUM)
    reason = f"no {CHROMIUM}: install Debian's chromium to run the browser tests"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (.ci/run installs it)")
    pytest.skip(reason)


class ServedDatabase:
    """``workmem serve`` on an existing database (no in-process worker: nothing to process)."""

    def __init__(self, database_url: str, home: Path) -> None:
        self.port = free_port()
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("WORKMEM_") or k == SERVICE_KEY_VARIABLE
        }
        env.update(
            {
                "DATABASE_URL": database_url,
                "WORKMEM_HOME": str(home),
                "WORKMEM_WORKER_ENABLED": "false",
                "WORKMEM_LOG_JSON": "true",
            }
        )
        home.mkdir(parents=True, exist_ok=True)
        self.log_path = home / f"serve-{self.port}.log"
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [*workmem_command(), "serve", "--port", str(self.port)],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout_s: float = 90) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"serve exited: {self.log_path.read_text()}")
            try:
                if httpx.get(f"{self.base_url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"server not ready: {self.log_path.read_text()}")

    def stop(self) -> str:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        finally:
            self._log.close()
        return self.log_path.read_text()
