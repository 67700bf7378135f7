"""Fault suites' tools: a mixed load that records what was acknowledged, real processes to kill
and restart, and the checks of what the database holds afterwards.

The load appends (single and batched, every one under an ``Idempotency-Key`` that its retries
reuse), commits (some waiting) and reads, on many agent sessions, from several clients; a
message counts as acknowledged when its 201 arrived. Nothing here decides a test's verdict.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx
import psycopg

from tests.support.clusters import cluster_url, register
from tests.support.servers import free_port, workmem_command


def environment(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "WORKMEM_DATABASE_URL")}
    env.update({"WORKMEM_HOME": str(home), "WORKMEM_LOG_JSON": "true", **extra})
    return env


@dataclass
class Process:
    """A ``workmem`` process that can be killed and started again, its output in a log."""

    name: str
    args: list[str]
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[str] | None = None
    _log: TextIO | None = None
    starts: int = 0

    def start(self) -> None:
        self._log = self.log_path.open("a")
        self.process = subprocess.Popen(
            [*workmem_command(), *self.args],
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.starts += 1

    def wait_for_line(self, text: str, timeout_s: float = 90) -> None:
        """Until this start of the process has logged ``text`` (the log holds every start's)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.log_path.read_text().count(text) >= self.starts:
                return
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"{self.name} exited: {self.log_path.read_text()[-2000:]}")
            time.sleep(0.1)
        raise AssertionError(f"{self.name} did not log {text!r}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self._close()

    def stop(self, timeout_s: float = 60) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout_s)
        finally:
            self._close()

    def _close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


WORKER_STARTED = "worker(s) started"
"""What ``workmem worker`` prints once its loops run."""


def wait_ready(base_url: str, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base_url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{base_url} did not become ready")


@dataclass
class Service:
    """``workmem serve`` (with its in-process worker) and one ``workmem worker``, on one home."""

    home: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        register(self.home / "pgdata")
        env = environment(self.home, **self.extra_env)
        logs = self.home.parent
        self.serve = Process("serve", ["serve", "--port", str(self.port)], env, logs / "serve.log")
        self.worker = Process("worker", ["worker"], env, logs / "worker.log")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def key(self) -> str:
        return (self.home / "local-api-key").read_text().strip()

    def database_url(self) -> str:
        return cluster_url(self.home / "pgdata", "workmem")

    def start(self) -> None:
        """Both processes, each up: the faults a test then causes find them running."""
        self.serve.start()
        wait_ready(self.base_url)
        self.worker.start()
        self.worker.wait_for_line(WORKER_STARTED)

    def logs(self) -> str:
        return "".join(p.log_path.read_text() for p in (self.serve, self.worker))


@dataclass
class Ledger:
    """What the clients were told: acknowledged message texts, by agent session."""

    acknowledged: dict[str, list[str]] = field(default_factory=dict)
    attempts: int = 0
    answers: dict[int, int] = field(default_factory=dict)
    transport_errors: int = 0
    latencies: list[tuple[float, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answered(self, status: int, seconds: float) -> None:
        with self.lock:
            self.answers[status] = self.answers.get(status, 0) + 1
            self.latencies.append((seconds, status))

    def acked(self, agent_session_id: str, texts: list[str]) -> None:
        with self.lock:
            self.acknowledged.setdefault(agent_session_id, []).extend(texts)

    @property
    def acknowledged_count(self) -> int:
        return sum(len(texts) for texts in self.acknowledged.values())


class Load:
    """``clients`` threads working on ``sessions`` agent sessions until ``stop`` is set."""

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        clients: int = 8,
        sessions: int = 16,
        seed: int = 20261201,
        retry_for_s: float = 120,
    ) -> None:
        self.base_url = base_url
        self.headers = {"Authorization": f"Bearer {key}"}
        self.clients = clients
        self.stop = threading.Event()
        self.ledger = Ledger()
        self.random = random.Random(seed)
        self.retry_for_s = retry_for_s
        with httpx.Client(base_url=base_url, headers=self.headers, timeout=30) as http:
            self.sessions = [
                http.post("/v1/sessions", json={"keep_recent_count": 2}).json()["id"]
                for _ in range(sessions)
            ]
        self._threads: list[threading.Thread] = []

    def request(
        self, http: httpx.Client, method: str, path: str, body: Any, *, key: str | None
    ) -> httpx.Response | None:
        """Send until answered (not 503), retrying connection failures with the same key; the
        answer, or None when the load was stopped first."""
        headers = dict(self.headers)
        if key is not None:
            headers["Idempotency-Key"] = key
        deadline = time.monotonic() + self.retry_for_s
        while time.monotonic() < deadline:
            started = time.perf_counter()
            self.ledger.attempts += 1
            try:
                response = http.request(method, path, json=body, headers=headers)
            except httpx.TransportError:
                self.ledger.transport_errors += 1
                if self.stop.is_set() and key is None:
                    return None
                time.sleep(0.1)
                continue
            self.ledger.answered(response.status_code, time.perf_counter() - started)
            if response.status_code in (409, 503) and key is not None:
                time.sleep(0.1)
                continue
            return response
        raise AssertionError(f"{method} {path} was never answered")

    def client(self, number: int) -> None:
        chooser = random.Random(number)
        sent = 0
        with httpx.Client(base_url=self.base_url, timeout=10) as http:
            while not self.stop.is_set():
                agent_session_id = chooser.choice(self.sessions)
                base = f"/v1/sessions/{agent_session_id}"
                action = chooser.random()
                if action < 0.55:
                    text = f"c{number}-m{sent}: fix app/main.py line {sent}"
                    sent += 1
                    answer = self.request(
                        http,
                        "POST",
                        f"{base}/messages",
                        {"role": "user", "content": text},
                        key=str(uuid.uuid4()),
                    )
                    if answer is not None and answer.status_code == 201:
                        self.ledger.acked(agent_session_id, [text])
                elif action < 0.75:
                    texts = [f"c{number}-b{sent}-{n}: KeyError in app/models.py" for n in range(3)]
                    sent += 1
                    answer = self.request(
                        http,
                        "POST",
                        f"{base}/messages:batch",
                        {"messages": [{"role": "assistant", "content": t} for t in texts]},
                        key=str(uuid.uuid4()),
                    )
                    if answer is not None and answer.status_code == 201:
                        self.ledger.acked(agent_session_id, texts)
                elif action < 0.88:
                    wait = chooser.random() < 0.3
                    self.request(
                        http,
                        "POST",
                        f"{base}/commit",
                        {
                            "keep_recent_count": chooser.choice([0, 1, 2]),
                            "wait": wait,
                            "wait_timeout_s": 2,
                        },
                        key=str(uuid.uuid4()),
                    )
                else:
                    path = chooser.choice([base, f"{base}/context", f"{base}/working-memory"])
                    self.request(http, "GET", path, None, key=None)

    def start(self) -> None:
        self._threads = [
            threading.Thread(target=self.client, args=(n,), daemon=True)
            for n in range(self.clients)
        ]
        for thread in self._threads:
            thread.start()

    def finish(self) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(timeout=self.retry_for_s + 30)
            assert not thread.is_alive(), "a client never got its answer"


# --- what the database holds ---------------------------------------------------------------


@contextmanager
def owner(url: str) -> Iterator[psycopg.Connection[Any]]:
    """The schema owner's connection (reads across tenants, behind the service's back)."""
    with psycopg.connect(url, autocommit=True) as connection:
        yield connection


def stored_texts(url: str) -> dict[str, list[str]]:
    with owner(url) as connection:
        rows = connection.execute(
            "SELECT agent_session_id::text, content_text FROM messages ORDER BY agent_session_id, seq"
        ).fetchall()
    stored: dict[str, list[str]] = {}
    for agent_session_id, content in rows:
        stored.setdefault(agent_session_id, []).append(content)
    return stored


def unfinished_archives(url: str) -> int:
    with owner(url) as connection:
        row = connection.execute(
            "SELECT count(*) FROM archives WHERE status IN ('pending', 'running')"
        ).fetchone()
    return int(row[0]) if row else 0


def archive_problems(url: str) -> list[str]:
    """Ranges that are not contiguous and disjoint, archives not done or failed, done archives
    without their seven section rows."""
    problems: list[str] = []
    with owner(url) as connection:
        archives = connection.execute(
            "SELECT agent_session_id::text, archive_seq, start_seq, end_seq, status"
            " FROM archives ORDER BY agent_session_id, archive_seq"
        ).fetchall()
        sections = dict(
            connection.execute(
                "SELECT agent_session_id::text || ':' || archive_seq, count(*)"
                " FROM wm_section_versions GROUP BY 1"
            ).fetchall()
        )
        counters = dict(
            connection.execute(
                "SELECT agent_session_id::text, archived_upto_seq FROM agent_sessions"
            ).fetchall()
        )
    previous: dict[str, tuple[int, int]] = {}
    for agent_session_id, archive_seq, start_seq, end_seq, status in archives:
        last_seq, last_end = previous.get(agent_session_id, (0, 0))
        if archive_seq != last_seq + 1 or start_seq != last_end + 1 or end_seq < start_seq:
            problems.append(f"{agent_session_id} archive {archive_seq}: [{start_seq}, {end_seq}]")
        if status not in ("done", "failed"):
            problems.append(f"{agent_session_id} archive {archive_seq} is {status}")
        if status == "done" and sections.get(f"{agent_session_id}:{archive_seq}") != 7:
            problems.append(f"{agent_session_id} archive {archive_seq}: not seven section rows")
        previous[agent_session_id] = (archive_seq, end_seq)
    for agent_session_id, (_, end_seq) in previous.items():
        if counters.get(agent_session_id) != end_seq:
            problems.append(f"{agent_session_id}: archived_upto_seq is not its last archive's end")
    return problems


def wait_until(predicate: Callable[[], bool], timeout_s: float) -> float | None:
    """Seconds until ``predicate`` held, or None if it never did within ``timeout_s``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        try:
            if predicate():
                return time.monotonic() - started
        except psycopg.OperationalError:
            pass
        time.sleep(0.2)
    return None
