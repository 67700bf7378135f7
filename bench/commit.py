"""Commit phase 1 latency with 10 000 vs 10 live messages (DESIGN 15: ratio ≤ 1.5, O(1)).

Prints JSON with the median latency of ``POST …/commit`` (wait=false) for each size, the same
run's raw primary-key select for reference, and the ratio.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time

import psycopg

from bench.support import Bench, bench_app

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


async def main() -> None:
    async with bench_app() as bench:
        small, large = await commit_latencies(bench)
        raw = raw_select_latency(bench.plain_url)
    print(
        json.dumps(
            {
                "commit_10_live_ms": round(small * 1000, 2),
                "commit_10000_live_ms": round(large * 1000, 2),
                "raw_select_commit_ms": round(raw * 1000, 3),
                "ratio_10000_to_10": round(large / small, 3),
                "target": "<= 1.5",
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
