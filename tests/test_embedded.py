"""The embedded cluster's life with real signals: start, reattach, stop, recover (defect 4).

Each test counts the postgres processes of its own data directory before and after.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.embedded import (
    HANDLE_FILE,
    LOGGER,
    POSTMASTER_PID,
    live_handles,
    pg_command,
    recover,
    restart_delay,
)
from tests.support.clusters import postgres_processes, postmaster_pid, stop_cluster
from tests.support.servers import Server, workmem_command


def running(data_dir: Path) -> int:
    """How many postgres processes serve ``data_dir``."""
    return len(postgres_processes([data_dir.resolve()]).get(data_dir.resolve(), []))


def wait_until(predicate: object, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    yield home
    stop_cluster(home / "pgdata")  # after a test that failed half way


@pytest.mark.parametrize(
    ("pids", "alive", "kept"),
    [
        ([], set(), []),
        ([10], {10}, [10]),
        ([10], set(), []),
        ([10, 11, 12], {10, 12}, [10, 12]),
        ([10, 10, 11], {10, 11}, [10, 11]),
    ],
)
def test_live_handles(pids: list[int], alive: set[int], kept: list[int]) -> None:
    assert live_handles(pids, alive.__contains__) == kept


def test_recover_forgets_dead_handles_and_a_postmaster_pid_that_is_not_ours(
    tmp_path: Path,
) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        (tmp_path / HANDLE_FILE).write_text(json.dumps([os.getpid(), dead.pid]))
        (tmp_path / POSTMASTER_PID).write_text(f"{sleeper.pid}\n{tmp_path}\n0\n5432\n\n\n\nready\n")
        (tmp_path / ".s.PGSQL.5432.lock").write_text(f"{sleeper.pid}\n")
        repaired = recover(tmp_path)
        assert json.loads((tmp_path / HANDLE_FILE).read_text()) == [os.getpid()]
        assert not (tmp_path / POSTMASTER_PID).exists()
        assert not (tmp_path / ".s.PGSQL.5432.lock").exists()
        assert len(repaired) == 2
        assert recover(tmp_path) == [], "nothing left to repair"
    finally:
        sleeper.kill()
        sleeper.wait()


e2e = pytest.mark.e2e


@e2e
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_serve_and_its_cluster(home: Path, signum: int) -> None:
    server = Server(home)
    server.wait_ready()
    data_dir = home / "pgdata"
    assert running(data_dir) > 0
    code = server.end(signum)
    assert code in (0, -signum), code
    assert wait_until(lambda: running(data_dir) == 0), "the cluster was left running"
    assert postmaster_pid(data_dir) is None


@e2e
def test_after_kill_9_the_next_serve_reattaches_and_stops_the_cluster(home: Path) -> None:
    first = Server(home)
    first.wait_ready()
    data_dir = home / "pgdata"
    cluster = postmaster_pid(data_dir)
    first.end(signal.SIGKILL)
    assert running(data_dir) > 0, "kill -9 leaves the cluster (nothing can stop it then)"
    assert first.process.pid in json.loads((data_dir / HANDLE_FILE).read_text())

    second = Server(home)
    second.wait_ready()
    assert postmaster_pid(data_dir) == cluster, "the running cluster is attached to, not restarted"
    key = (home / "local-api-key").read_text().strip()
    assert httpx.get(
        f"{second.base_url}/v1/sessions", headers={"Authorization": f"Bearer {key}"}, timeout=10
    ).is_success
    second.stop()
    assert wait_until(lambda: running(data_dir) == 0), "the dead handle kept the cluster alive"


@e2e
def test_a_stale_postmaster_pid_naming_a_live_process_is_recovered(home: Path) -> None:
    server = Server(home)
    server.wait_ready()
    server.stop()
    data_dir = home / "pgdata"
    assert wait_until(lambda: running(data_dir) == 0)
    # A crash left postmaster.pid behind, and its pid now belongs to an unrelated process.
    unrelated = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (data_dir / POSTMASTER_PID).write_text(
            f"{unrelated.pid}\n{data_dir}\n1700000000\n5432\n{data_dir}\n\n  1 2\nready\n"
        )
        again = Server(home)
        again.wait_ready()
        log = again.stop()
        assert f"stale postmaster.pid naming process {unrelated.pid}" in log
        (data_dir / POSTMASTER_PID).write_text(f"{unrelated.pid}\n{data_dir}\n0\n5432\n\n\n\n\n")
        worker = subprocess.Popen(
            [*workmem_command(), "worker"],
            env={**os.environ, "WORKMEM_HOME": str(home)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert worker.stdout is not None
        assert "worker(s) started" in worker.stdout.readline()
        worker.send_signal(signal.SIGTERM)
        _, errors = worker.communicate(timeout=60)
        assert worker.returncode == 0, errors
        assert unrelated.poll() is None, "the unrelated process was left alone"
    finally:
        unrelated.kill()
        unrelated.wait()
    assert wait_until(lambda: running(data_dir) == 0), "the worker, last, stops the cluster"


@e2e
def test_serve_says_serving_only_once_it_accepts_connections(home: Path) -> None:
    server = Server(home)
    try:
        assert server.process.stdout is not None
        line = ""
        while "serving on" not in line:
            line = server.process.stdout.readline()
            assert line, "serve exited before it served"
        assert line.strip().endswith(server.base_url)
        # One attempt, right after the line: the socket was bound before it was printed.
        assert httpx.get(f"{server.base_url}/healthz", timeout=5).status_code == 200
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("arguments", "level"),
    [
        (["-w", "stop"], logging.WARNING),
        (["stop"], logging.WARNING),
        (["status"], logging.ERROR),
    ],
)
def test_a_failed_stop_is_logged_as_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, arguments: list[str], level: int
) -> None:
    pg_ctl = pg_command("pg_ctl")

    with (
        caplog.at_level(logging.INFO, logger=LOGGER),
        pytest.raises(subprocess.CalledProcessError),
    ):
        pg_ctl(arguments, pgdata=tmp_path / "no-cluster-here")
    failures = [record for record in caplog.records if record.msg.startswith("Failed")]
    assert [record.levelno for record in failures] == [level]


@pytest.mark.parametrize(
    ("attempt", "delay"),
    [(1, 1.0), (2, 2.0), (3, 4.0), (5, 16.0), (6, 30.0), (7, 30.0), (500, 30.0)],
)
def test_restart_delay_doubles_up_to_its_cap(attempt: int, delay: float) -> None:
    assert restart_delay(attempt, base_s=1.0, max_s=30.0) == delay


@e2e
def test_serve_restarts_its_cluster_when_the_postmaster_dies(home: Path) -> None:
    """The postmaster of a running ``workmem serve`` is killed: serve starts the cluster again,
    says so in its log, and requests succeed again on the data they had."""
    server = Server(home)
    server.wait_ready()
    data_dir = home / "pgdata"
    key = (home / "local-api-key").read_text().strip()
    http = httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=10
    )
    try:
        created = http.post("/v1/sessions", json={"external_id": "before-the-crash"})
        assert created.status_code == 201, created.text
        killed = postmaster_pid(data_dir)
        assert killed is not None
        os.kill(killed, signal.SIGKILL)

        def answers_again() -> bool:
            try:
                found = http.get("/v1/sessions", params={"external_id": "before-the-crash"})
                items: list[object] = found.json()["items"]
                return found.status_code == 200 and items != []
            except (httpx.TransportError, ValueError, KeyError):
                return False

        assert wait_until(answers_again, timeout_s=120), "requests never succeeded again"
        assert postmaster_pid(data_dir) not in (None, killed)
        again = http.post("/v1/sessions", json={"external_id": "after-the-crash"})
        assert again.status_code == 201, again.text
    finally:
        http.close()
        log = server.stop()
    assert "the postmaster is gone; restarting the cluster" in log
    assert "embedded postgres: restarted" in log
    assert wait_until(lambda: running(data_dir) == 0), "the restarted cluster was left running"
