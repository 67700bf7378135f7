"""Outage suite: the database stopped, killed and frozen (SIGSTOP) under a load on the real
server. Every answer comes back (503 problem+json while the database is away, never a 500 or a
hang), ``/readyz`` says what is true, everything works again once the database is back, and
no acknowledged message is lost or duplicated.

Bounded: three outages of 4 s each, 4 clients and a prober; about a minute. Prints, per
outage, how many probes were answered 503 and how long the slowest took, and how long after
the database came back requests succeeded again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.support.clusters import postmaster_pid, socket_dir_of, start_cluster, stop_cluster
from tests.support.faults import Load, Service, stored_texts, unfinished_archives, wait_until

pytestmark = pytest.mark.e2e

OUTAGE_S = 4.0
PROBE_TIMEOUT_S = 10.0


class Prober:
    """Reads an agent session and ``/readyz`` every 50 ms, recording (phase, route, status,
    seconds); a probe unanswered within ``PROBE_TIMEOUT_S`` is a hang (status 0)."""

    def __init__(self, service: Service, agent_session_id: str) -> None:
        self.service = service
        self.path = f"/v1/sessions/{agent_session_id}"
        self.phase = "before"
        self.records: list[tuple[str, str, int, float]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.service.key()}"}
        with httpx.Client(base_url=self.service.base_url, timeout=PROBE_TIMEOUT_S) as http:
            while not self.stop.is_set():
                for route, path, extra in (
                    ("session", self.path, headers),
                    ("readyz", "/readyz", {}),
                ):
                    phase = self.phase
                    started = time.perf_counter()
                    try:
                        status = http.get(path, headers=extra).status_code
                    except httpx.TimeoutException:
                        status = 0
                    except httpx.TransportError:
                        status = -1
                    self.records.append((phase, route, status, time.perf_counter() - started))
                time.sleep(0.05)

    def burst(self, requests: int = 40) -> None:
        """Many reads at once: more than the pools hold, so some need a new connection."""
        headers = {"Authorization": f"Bearer {self.service.key()}"}
        phase = self.phase

        def one() -> None:
            started = time.perf_counter()
            try:
                status = httpx.get(
                    f"{self.service.base_url}{self.path}/context",
                    headers=headers,
                    timeout=PROBE_TIMEOUT_S,
                ).status_code
            except httpx.TimeoutException:
                status = 0
            self.records.append((phase, "burst", status, time.perf_counter() - started))

        threads = [threading.Thread(target=one) for _ in range(requests)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def of(self, phase: str, route: str) -> list[tuple[int, float]]:
        return [(s, t) for p, r, s, t in self.records if p == phase and r == route]


def test_the_database_away_answers_503_and_comes_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data_dir = home / "pgdata"
    # The operator takes the cluster away and gives it back here, so serve must not restart it.
    service = Service(
        home,
        {
            "WORKMEM_WORKER_LEASE_S": "3",
            "WORKMEM_WORKER_POLL_S": "0.2",
            "WORKMEM_EMBEDDED_RESTART": "false",
        },
    )
    try:
        service.start()
        load = Load(service.base_url, service.key(), clients=4, sessions=8, retry_for_s=60)
        prober = Prober(service, load.sessions[0])
        load.start()
        prober.thread.start()
        time.sleep(2)
        socket_dir = socket_dir_of(data_dir)

        def stopped() -> Callable[[], None]:
            pid = postmaster_pid(data_dir)
            assert pid is not None
            os.kill(pid, signal.SIGINT)  # a fast shutdown, as an operator's pg_ctl stop
            wait_until(lambda: postmaster_pid(data_dir) is None, 30)
            return lambda: start_cluster(data_dir, socket_dir)

        def killed() -> Callable[[], None]:
            pid = postmaster_pid(data_dir)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            return lambda: start_cluster(data_dir, socket_dir)

        def frozen() -> Callable[[], None]:
            pid = postmaster_pid(data_dir)
            assert pid is not None
            os.kill(pid, signal.SIGSTOP)
            return lambda: os.kill(pid, signal.SIGCONT)

        figures: list[str] = []
        for name, outage in (("stopped", stopped), ("killed", killed), ("frozen", frozen)):
            prober.phase = name
            restore = outage()
            time.sleep(OUTAGE_S / 2)
            prober.burst()
            time.sleep(OUTAGE_S / 2)
            restore()
            back = time.monotonic()
            prober.phase = f"{name}, back"
            ok_again = wait_until(
                lambda: httpx.get(f"{service.base_url}/readyz", timeout=5).status_code == 200, 60
            )
            assert ok_again is not None, f"not ready again after the database was {name}"
            recovered = wait_until(
                lambda: (
                    httpx.get(
                        f"{service.base_url}{prober.path}",
                        headers={"Authorization": f"Bearer {service.key()}"},
                        timeout=5,
                    ).status_code
                    == 200
                ),
                60,
            )
            assert recovered is not None
            during = (
                prober.of(name, "session") + prober.of(name, "readyz") + prober.of(name, "burst")
            )
            refused = [t for s, t in during if s == 503]
            ready = prober.of(name, "readyz")
            figures.append(
                f"{name}: {len(during)} probes, {len(refused)} answered 503 (slowest "
                f"{max(refused, default=0):.2f} s, median {statistics.median(refused or [0]):.2f} s), "
                f"readyz 503 {sum(1 for s, _ in ready if s == 503)} times; requests succeed "
                f"{time.monotonic() - back:.1f} s after the database is back"
            )
            statuses = {s for s, _ in during}
            assert statuses <= {200, 503}, (name, statuses)
            if name != "frozen":
                assert 503 in {s for s, _ in ready}, f"/readyz said ready while {name}"
            time.sleep(1)
        prober.stop.set()
        prober.thread.join(timeout=30)
        load.finish()
        url = service.database_url()
        assert wait_until(lambda: unfinished_archives(url) == 0, 120) is not None
        stored = stored_texts(url)
        everything = [text for texts in stored.values() for text in texts]
        lost = sum(
            1
            for agent_session_id, texts in load.ledger.acknowledged.items()
            for text in texts
            if text not in stored.get(agent_session_id, [])
        )
        print("outage: " + "; ".join(figures))  # noqa: T201 - the suite's figures
        print(  # noqa: T201
            f"outage: acknowledged {load.ledger.acknowledged_count}, lost {lost}, duplicated "
            f"{len(everything) - len(set(everything))}; answers "
            f"{dict(sorted(load.ledger.answers.items()))}"
        )
        assert lost == 0
        assert len(everything) == len(set(everything))
        assert 500 not in load.ledger.answers
        assert all(status != 0 for _, _, status, _ in prober.records), "a probe hung"
    finally:
        pid = postmaster_pid(data_dir)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        service.worker.stop()
        service.serve.stop()
        stop_cluster(data_dir)
