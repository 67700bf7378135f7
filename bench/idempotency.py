"""What an ``Idempotency-Key`` costs an append, against the database's own limit (DESIGN 15).

The key is claimed, and the answer stored, in the append's own transaction (three pipelined
round trips in a group commit instead of one statement), which is why its statements run at
driver level (``docs/database.md``). Starts a private Postgres, measures raw psycopg single-row
``INSERT`` + ``COMMIT`` at 8 threads, runs ``workmem serve`` (group commit on) and appends from
8 clients with and without a key, then retries every keyed append once (each a replay). Prints
one JSON document with the ratios.

    python -m bench.idempotency [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.append import Server, fsync_probe, raw_insert_rate
from bench.support import operator_key
from tests.support.postgres import PostgresForTests


async def appends(
    url: str, key: str, *, clients: int, requests: int, keyed: bool
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=60) as http:
        sessions = [(await http.post("/v1/sessions", json={})).json()["id"] for _ in range(clients)]
        latencies: list[float] = []
        sent: list[tuple[str, dict[str, str], str]] = []

        async def client(agent_session_id: str) -> None:
            for n in range(requests):
                body = {"role": "user", "content": f"message {n} of the benchmark"}
                extra = {}
                if keyed:
                    extra = {"Idempotency-Key": str(uuid.uuid4())}
                    sent.append((agent_session_id, body, extra["Idempotency-Key"]))
                started = time.perf_counter()
                response = await http.post(
                    f"/v1/sessions/{agent_session_id}/messages", json=body, headers=extra
                )
                if response.status_code != 201:
                    raise RuntimeError(f"append answered {response.status_code}")
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(client(s) for s in sessions))
        elapsed = time.perf_counter() - started
        result: dict[str, Any] = {
            "messages_per_s": round(clients * requests / elapsed, 1),
            "p50_ms": round(statistics.median(latencies) * 1000, 2),
        }
        if keyed:
            replay_started = time.perf_counter()
            for agent_session_id, body, idempotency_key in sent[: clients * 20]:
                replay = await http.post(
                    f"/v1/sessions/{agent_session_id}/messages",
                    json=body,
                    headers={"Idempotency-Key": idempotency_key},
                )
                if replay.headers.get("idempotent-replayed") != "true":
                    raise RuntimeError("a retry was not a replay")
            result["replays_per_s_1_client"] = round(
                len(sent[: clients * 20]) / (time.perf_counter() - replay_started), 1
            )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer requests")
    args = parser.parse_args()
    per_client = 100 if args.quick else 250
    postgres = PostgresForTests.start()
    workdir = Path(tempfile.mkdtemp(prefix="wmbench-idempotency-"))
    try:
        urls = postgres.create_app_database("wmbench")
        key = asyncio.run(operator_key(urls.app, "bench"))
        plain = urls.admin.replace("postgresql+psycopg://", "postgresql://")
        data_dir = postgres.data_dir or workdir
        report: dict[str, Any] = {"fsync_per_s_before": round(fsync_probe(data_dir), 1)}
        raw_8 = raw_insert_rate(plain, threads=8, per_thread=per_client)
        report["raw_insert_commit_per_s_8_threads"] = round(raw_8, 1)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("WORKMEM_")},
            "DATABASE_URL": urls.app,
            "WORKMEM_WORKER_ENABLED": "false",
            "WORKMEM_LOG_LEVEL": "INFO",
        }
        server = Server(env, 1, workdir / "serve.log")
        try:
            plain_run = asyncio.run(
                appends(server.url, key, clients=8, requests=per_client, keyed=False)
            )
            keyed_run = asyncio.run(
                appends(server.url, key, clients=8, requests=per_client, keyed=True)
            )
        finally:
            server.stop()
        report["without_key_8_clients"] = plain_run
        report["with_key_8_clients"] = keyed_run
        report["ratio_keyed_to_raw_8_threads"] = round(keyed_run["messages_per_s"] / raw_8, 3)
        report["ratio_keyed_to_unkeyed"] = round(
            keyed_run["messages_per_s"] / plain_run["messages_per_s"], 3
        )
        report["fsync_per_s_after"] = round(fsync_probe(data_dir), 1)
        print(json.dumps(report, indent=2))
    finally:
        postgres.stop()


if __name__ == "__main__":
    main()
