"""Crash suite: real ``serve`` and ``worker`` processes under a mixed load on many agent
sessions, killed with SIGKILL at random moments (a few times with the postmaster too), and
restarted. Afterwards every acknowledged message is stored exactly once, archive ranges are
contiguous and disjoint, every archive is done or failed, ``pending_tokens`` equals its
recomputation and every done archive has its seven section rows.

Bounded: 24 kills, one to three seconds apart, 8 clients on 16 agent sessions, leases of 3 s;
about two minutes. Prints its figures: kills survived, messages acknowledged, stored, lost and
duplicated, and how long the archives took to finish after the last kill.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.clusters import postmaster_pid, stop_cluster
from tests.support.faults import (
    Load,
    Service,
    archive_problems,
    environment,
    stored_texts,
    unfinished_archives,
    wait_ready,
    wait_until,
)
from tests.support.servers import workmem_command

pytestmark = pytest.mark.e2e

KILLS = 24
POSTMASTER_EVERY = 6
"""Every sixth kill takes the postmaster down with the server."""
FINISH_WITHIN_S = 180.0


def test_kill_9_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    service = Service(home, {"WORKMEM_WORKER_LEASE_S": "3", "WORKMEM_WORKER_POLL_S": "0.2"})
    chooser = random.Random(24)
    try:
        service.start()
        load = Load(service.base_url, service.key())
        load.start()
        kills = {"serve": 0, "worker": 0, "postmaster": 0}
        last_kill = time.monotonic()
        for number in range(1, KILLS + 1):
            time.sleep(chooser.uniform(1.0, 3.0))
            victim = chooser.choice([service.serve, service.worker])
            if number % POSTMASTER_EVERY == 0:
                pid = postmaster_pid(home / "pgdata")
                service.serve.kill()
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                    kills["postmaster"] += 1
                kills["serve"] += 1
                victim = service.serve
            else:
                victim.kill()
                kills[victim.name] += 1
            last_kill = time.monotonic()
            victim.start()
            if victim is service.serve:
                wait_ready(service.base_url)
        load.finish()
        url = service.database_url()
        recovered_s = wait_until(lambda: unfinished_archives(url) == 0, FINISH_WITHIN_S)
        since_last_kill = time.monotonic() - last_kill
        assert recovered_s is not None, f"archives unfinished {FINISH_WITHIN_S} s after the load"

        stored = stored_texts(url)
        acknowledged = load.ledger.acknowledged
        lost = duplicated = 0
        for agent_session_id, texts in acknowledged.items():
            held = stored.get(agent_session_id, [])
            for text in texts:
                copies = held.count(text)
                lost += copies == 0
                duplicated += copies > 1
        everything = [text for texts in stored.values() for text in texts]
        twice = len(everything) - len(set(everything))
        problems = archive_problems(url)
        check = subprocess.run(
            [*workmem_command(), "pending-tokens", "check"],
            env=environment(home),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        archives = json.dumps(kills)
        print(  # noqa: T201 - the suite's figures
            f"crash: kills {archives} ({sum(kills.values())} processes) survived; "
            f"messages acknowledged {load.ledger.acknowledged_count}, stored "
            f"{len(everything)}, lost {lost}, duplicated {duplicated + twice}; "
            f"archives finished {since_last_kill:.1f} s after the last kill; answers "
            f"{dict(sorted(load.ledger.answers.items()))}; connection errors "
            f"{load.ledger.transport_errors}"
        )
        assert sum(kills.values()) >= 20
        assert load.ledger.acknowledged_count > 100
        assert (lost, duplicated, twice) == (0, 0, 0)
        assert problems == []
        assert check.returncode == 0, check.stdout + check.stderr
        assert json.loads(check.stdout)["drifted"] == []
        assert 500 not in load.ledger.answers, "no server error"
        errors = [line for line in service.logs().splitlines() if '"level": "error"' in line]
        assert errors == [], "\n".join(errors[:5])
    finally:
        service.worker.stop()
        service.serve.stop()
        stop_cluster(home / "pgdata")
