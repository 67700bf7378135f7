"""Commit latency: phase 1 with 10 000 vs 10 live messages (DESIGN 15: ratio ≤ 1.5, O(1)), and
a ``wait: true`` commit keeping 10 at 100, 1 000 and 5 000 live messages against the real server.

Prints JSON: the median latency of ``POST …/commit`` (wait=false) in process for each size with
the same run's raw primary-key select and the ratio; then, from a separate client against
``workmem serve`` (its in-process worker running, as deployed), the median of a waiting commit
and of a phase-1-only commit at each size in the same run, against the figures OpenViking 0.5.2
measured for its whole commit (target: at most 0.1 of them), and the same server's raw primary-key
select as the Postgres baseline. It runs on two kinds of live messages: an airline agent's real
sessions (τ-bench runs back to back: the lighter text) and coding dialogue (SWE-agent
trajectories full of paths, tracebacks and ids), or generated text when the datasets are absent;
a pass over a dataset after the first has its numbers shifted, so no two messages are the same.
``stages`` times each stage of the offline generation in process on the same messages.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import psycopg

from bench.append import Server
from bench.commit_stages import dialogue, first_live, generation_stages
from bench.support import Bench, bench_app, operator_key
from tests.support.postgres import PostgresForTests

WAIT_SIZES: Final = (100, 1_000, 5_000)
OPENVIKING_COMMIT_MS: Final[dict[str, dict[int, float]]] = {
    "airline": {100: 921.0, 1_000: 583.0, 5_000: 3_083.0},
    "coding": {1_000: 712.0, 5_000: 2_278.0},
}
"""OpenViking 0.5.2's whole commit (instant stub model), measured in one window on this machine
per kind of dialogue (not measured on coding dialogue at 100 live messages)."""
DIALOGUES: Final = ("airline", "coding")
TARGET_SHARE: Final = 0.1
TURN: Final = 10
"""The messages of the agent's last turn, appended after the server prepared the session."""

ROUNDS = 15


async def prepared_session(bench: Bench, live: int) -> str:
    created = await bench.http.post("/v1/sessions", json={}, headers=bench.headers)
    agent_session_id: str = created.json()["id"]
    for start in range(0, live, 500):
        batch = [
            {"role": "user", "content": f"message {n}"}
            for n in range(start, min(live, start + 500))
        ]
        await bench.http.post(
            f"/v1/sessions/{agent_session_id}/messages:batch",
            json={"messages": batch},
            headers=bench.headers,
        )
    return agent_session_id


async def commit_once(bench: Bench, live: int) -> float:
    agent_session_id = await prepared_session(bench, live)
    started = time.perf_counter()
    response = await bench.http.post(
        f"/v1/sessions/{agent_session_id}/commit",
        json={"keep_recent_count": 5},
        headers=bench.headers,
    )
    elapsed = time.perf_counter() - started
    assert response.status_code == 202, response.text
    return elapsed


async def commit_latencies(bench: Bench) -> tuple[float, float]:
    """Median latency for 10 and for 10 000 live messages, measured in alternation so that
    warm-up and the disk's changing fsync rate affect both sizes alike."""
    await commit_once(bench, 10)  # warm-up: connections, statement caches
    small: list[float] = []
    large: list[float] = []
    for _ in range(ROUNDS):
        small.append(await commit_once(bench, 10))
        large.append(await commit_once(bench, 10_000))
    return statistics.median(small), statistics.median(large)


def raw_select_latency(plain_url: str) -> float:
    with psycopg.connect(plain_url) as connection:
        samples = []
        for _ in range(200):
            started = time.perf_counter()
            connection.execute("SELECT tenant_id FROM tenants LIMIT 1").fetchone()
            connection.commit()
            samples.append(time.perf_counter() - started)
    samples.sort()
    return samples[len(samples) // 2]


def prepared(http: httpx.Client, source: Iterator[dict[str, Any]], live: int) -> str:
    created = http.post("/v1/sessions", json={})
    created.raise_for_status()
    agent_session_id: str = created.json()["id"]
    appended(http, agent_session_id, first_live(source, live))
    return agent_session_id


def appended(http: httpx.Client, agent_session_id: str, messages: list[dict[str, Any]]) -> None:
    for start in range(0, len(messages), 500):
        response = http.post(
            f"/v1/sessions/{agent_session_id}/messages:batch",
            json={"messages": messages[start : start + 500]},
        )
        response.raise_for_status()


def prepared_ahead(http: httpx.Client, source: Iterator[dict[str, Any]], live: int) -> str:
    """An agent session of ``live`` messages whose next archive the server prepared while it
    was idle before its last turn (``TURN`` messages) was appended: as an agent works, pausing
    for its model between appends, and commits right after a turn's last message."""
    messages = first_live(source, live)
    agent_session_id = prepared(http, iter(messages), live - TURN)
    before = prepared_count(http)
    deadline = time.monotonic() + 120
    while prepared_count(http) <= before:
        if time.monotonic() > deadline:
            raise RuntimeError("the server never prepared the idle agent session")
        time.sleep(0.05)
    appended(http, agent_session_id, messages[live - TURN :])
    return agent_session_id


def prepared_count(http: httpx.Client) -> float:
    """How many preparations of an idle agent session with something to archive the server
    finished (stored, or nothing to prepare in an archive of one batch): the other sessions of
    the bench are committed, which leaves nothing to archive or an archive not yet done."""
    outcomes = ('{outcome="stored"}', '{outcome="current"}', '{outcome="single_batch"}')
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in http.get("/metrics").text.splitlines()
        if line.startswith("workmem_archives_prepared_total")
        and line.split(" ", 1)[0].endswith(outcomes)
    )


def timed_commit(http: httpx.Client, agent_session_id: str, *, wait: bool) -> float:
    started = time.perf_counter()
    response = http.post(
        f"/v1/sessions/{agent_session_id}/commit", json={"keep_recent_count": 10, "wait": wait}
    )
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    expected = "done" if wait else "accepted"
    assert response.json()["status"] == expected, response.text
    return elapsed * 1000


def idle(http: httpx.Client, agent_session_id: str) -> None:
    """Wait (untimed) until the agent session's newest archive is processed."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        archive = http.get(f"/v1/sessions/{agent_session_id}/archives/1").json()
        if archive["status"] in ("done", "failed"):
            return
        time.sleep(0.05)
    raise RuntimeError("the background worker did not process the archive")


def wait_commit_latencies(rounds: int, name: str) -> dict[str, Any]:
    postgres = PostgresForTests.start()
    try:
        urls = postgres.create_app_database("wmbenchwait")
        key = asyncio.run(operator_key(urls.app, "bench"))
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("WORKMEM_")},
            "DATABASE_URL": urls.app,
            # The archive jobs a waiting commit runs work across tenants: the service key.
            "WORKMEM_SERVICE_KEY": os.environ["WORKMEM_SERVICE_KEY"],
            "WORKMEM_LOG_LEVEL": "WARNING",
        }
        with tempfile.TemporaryDirectory(prefix="wmbench-commit-") as tmp:
            server = Server(env, 1, Path(tmp) / "serve.log")
            try:
                label, source = dialogue(name)
                waited: dict[int, list[float]] = {size: [] for size in WAIT_SIZES}
                ahead: dict[int, list[float]] = {size: [] for size in WAIT_SIZES}
                phase1: dict[int, list[float]] = {size: [] for size in WAIT_SIZES}
                headers = {"Authorization": f"Bearer {key}"}
                with httpx.Client(base_url=server.url, headers=headers, timeout=120) as http:
                    timed_commit(http, prepared(http, source, 50), wait=True)  # warm-up
                    # Sizes interleave, so a slow minute of the disk hits all of them alike.
                    for _ in range(rounds):
                        for size in WAIT_SIZES:
                            waited[size].append(
                                timed_commit(http, prepared(http, source, size), wait=True)
                            )
                            ahead[size].append(
                                timed_commit(http, prepared_ahead(http, source, size), wait=True)
                            )
                            accepted = prepared(http, source, size)
                            phase1[size].append(timed_commit(http, accepted, wait=False))
                            # The background worker processes it now; measure on an idle server.
                            idle(http, accepted)
            except httpx.HTTPStatusError:
                log = (Path(tmp) / "serve.log").read_text(errors="replace")
                print(log[-4000:], file=sys.stderr)  # the server's reason, before it is gone
                raise
            finally:
                server.stop()
        plain = urls.admin.replace("postgresql+psycopg://", "postgresql://")
        raw_ms = raw_select_latency(plain) * 1000
    finally:
        postgres.stop()
    result: dict[str, Any] = {
        "live_messages": label,
        "rounds": rounds,
        "raw_select_commit_ms": round(raw_ms, 3),
        "sizes": {},
    }
    for size in WAIT_SIZES:
        wait_ms = statistics.median(waited[size])
        ahead_ms = statistics.median(ahead[size])
        openviking = OPENVIKING_COMMIT_MS[name].get(size)
        result["sizes"][str(size)] = {
            "wait_commit_ms": round(wait_ms, 1),
            "spread_ms": [round(min(waited[size]), 1), round(max(waited[size]), 1)],
            "phase1_commit_ms": round(statistics.median(phase1[size]), 1),
            "wait_to_raw_select": round(wait_ms / raw_ms, 1),
            "openviking_commit_ms": openviking,
            "share_of_openviking": None if openviking is None else round(wait_ms / openviking, 3),
            "prepared_wait_commit_ms": round(ahead_ms, 1),
            "prepared_share_of_openviking": (
                None if openviking is None else round(ahead_ms / openviking, 3)
            ),
        }
    result["target_share_of_openviking"] = f"<= {TARGET_SHARE}"
    return result


async def phase1_o1() -> dict[str, Any]:
    async with bench_app() as bench:
        small, large = await commit_latencies(bench)
        raw = raw_select_latency(bench.plain_url)
    return {
        "commit_10_live_ms": round(small * 1000, 2),
        "commit_10000_live_ms": round(large * 1000, 2),
        "raw_select_commit_ms": round(raw * 1000, 3),
        "ratio_10000_to_10": round(large / small, 3),
        "target": "<= 1.5",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=7, help="waiting commits per size")
    parser.add_argument("--only", choices=("phase1", "wait", "stages"), default=None)
    parser.add_argument(
        "--dialogue", choices=DIALOGUES, action="append", help="default: both, one after another"
    )
    args = parser.parse_args()
    names = tuple(args.dialogue or DIALOGUES)
    report: dict[str, Any] = {}
    if args.only in (None, "phase1"):
        report["phase1"] = asyncio.run(phase1_o1())
    if args.only in (None, "wait"):
        report["wait"] = {name: wait_commit_latencies(args.rounds, name) for name in names}
    if args.only in (None, "stages"):
        report["stages"] = {
            name: generation_stages(name, WAIT_SIZES, max(1, args.rounds // 2)) for name in names
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
