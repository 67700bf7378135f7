"""Append throughput against the database's own limit (DESIGN 15).

Prints JSON: messages/s of ``POST …/messages`` with 8 concurrent clients, of raw psycopg
single-row ``INSERT`` + ``COMMIT`` at 8 threads in the same run, and of ``messages:batch`` of 100,
with the ratios the targets name (≥ 0.5 and ≥ 5).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import psycopg

from bench.support import Bench, bench_app

CLIENTS = 8
PER_CLIENT = 150
BATCHES = 30


def raw_insert_rate(plain_url: str) -> float:
    with psycopg.connect(plain_url, autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS bench_raw (id bigserial PRIMARY KEY, body text)"
        )

    def work() -> None:
        with psycopg.connect(plain_url) as connection:
            for n in range(PER_CLIENT):
                connection.execute("INSERT INTO bench_raw (body) VALUES (%s)", (f"message {n}",))
                connection.commit()

    threads = [threading.Thread(target=work) for _ in range(CLIENTS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return CLIENTS * PER_CLIENT / (time.perf_counter() - started)


async def api_single_rate(bench: Bench) -> float:
    sessions = []
    for _ in range(CLIENTS):
        created = await bench.http.post("/v1/sessions", json={}, headers=bench.headers)
        sessions.append(created.json()["id"])

    async def client(agent_session_id: str) -> None:
        for n in range(PER_CLIENT):
            response = await bench.http.post(
                f"/v1/sessions/{agent_session_id}/messages",
                json={"role": "user", "content": f"message {n}"},
                headers=bench.headers,
            )
            assert response.status_code == 201

    started = time.perf_counter()
    await asyncio.gather(*(client(s) for s in sessions))
    return CLIENTS * PER_CLIENT / (time.perf_counter() - started)


async def api_batch_rate(bench: Bench) -> float:
    created = await bench.http.post("/v1/sessions", json={}, headers=bench.headers)
    agent_session_id = created.json()["id"]
    batch = [{"role": "user", "content": f"message {n}"} for n in range(100)]
    started = time.perf_counter()
    for _ in range(BATCHES):
        response = await bench.http.post(
            f"/v1/sessions/{agent_session_id}/messages:batch",
            json={"messages": batch},
            headers=bench.headers,
        )
        assert response.status_code == 201
    return BATCHES * 100 / (time.perf_counter() - started)


async def main() -> None:
    async with bench_app() as bench:
        raw = raw_insert_rate(bench.plain_url)
        single = await api_single_rate(bench)
        batch = await api_batch_rate(bench)
    print(
        json.dumps(
            {
                "raw_insert_commit_8_threads_per_s": round(raw, 1),
                "api_append_8_clients_per_s": round(single, 1),
                "api_batch_100_messages_per_s": round(batch, 1),
                "ratio_api_to_raw": round(single / raw, 3),
                "ratio_batch_to_single": round(batch / single, 2),
                "targets": {"ratio_api_to_raw": ">= 0.5", "ratio_batch_to_single": ">= 5"},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
