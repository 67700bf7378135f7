"""Append throughput of the real server against the database's own limit (DESIGN 15).

Starts a private Postgres, measures raw psycopg single-row ``INSERT`` + ``COMMIT`` at 1 and 8
threads on it, then runs ``workmem serve`` (production settings) with 1 and 2 workers, and with
and without group commit, and drives it from a separate load process (``bench.load``): single
appends from 8 clients and from 1, and batches of 100. An fsync probe runs before and after, since
the disk's flush rate decides both sides. Prints one JSON document with the ratios the targets
name: single appends ≥ 0.5 × raw at 8 and at 1, p99 ≤ 4 × p50, batches ≥ 5 × single. The same
load process against ``GET /healthz`` gives the HTTP ceiling of this machine: what the client
and the server's HTTP stack manage with no work behind them, in the same run. Each of those
loads also reports the CPU spent per request by the server, by Postgres and by the load process
(``cpu_ms_per_request``) and the load average after it: on a shared machine the CPU per request
says more than the rate.

    python -m bench.append [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench.support import operator_key
from tests.support.postgres import PostgresForTests


def raw_insert_rate(plain_url: str, threads: int, per_thread: int) -> float:
    with psycopg.connect(plain_url, autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS bench_raw (id bigserial PRIMARY KEY, body text)"
        )

    def work() -> None:
        with psycopg.connect(plain_url) as connection:
            for n in range(per_thread):
                connection.execute("INSERT INTO bench_raw (body) VALUES (%s)", (f"message {n}",))
                connection.commit()

    workers = [threading.Thread(target=work) for _ in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return threads * per_thread / (time.perf_counter() - started)


def fsync_probe(directory: Path, rounds: int = 200) -> float:
    """fsyncs per second of a small file on the cluster's disk."""
    path = directory / "fsync-probe"
    with path.open("wb") as handle:
        started = time.perf_counter()
        for n in range(rounds):
            handle.write(n.to_bytes(8, "little"))
            handle.flush()
            os.fsync(handle.fileno())
        rate = rounds / (time.perf_counter() - started)
    path.unlink()
    return rate


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


SERVERS = ("uvicorn", "granian")
"""``uvicorn`` is what ``workmem serve`` runs; the others serve ``app.asgi:app`` the same way,
when installed, to compare HTTP stacks on the real endpoints."""


def server_available(name: str) -> bool:
    if name == "uvicorn":
        return True
    return importlib.util.find_spec(name) is not None


def server_command(name: str, port: int, workers: int) -> list[str]:
    if name == "uvicorn":
        command = [sys.executable, "-m", "app.cli", "serve", "--port", str(port)]
        return command + (["--workers", str(workers)] if workers > 1 else [])
    if name == "granian":
        return [
            sys.executable,
            "-m",
            "granian",
            "--interface",
            "asgi",
            "--loop",
            "uvloop",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--no-ws",
            "app.asgi:app",
        ]
    raise ValueError(f"unknown server {name}")


class Server:
    """``workmem serve`` (or another ASGI server on ``app.asgi:app``) on a free loopback port,
    as an operator would run it."""

    def __init__(self, env: dict[str, str], workers: int, log: Path, name: str = "uvicorn") -> None:
        self.port = free_port()
        self.log = log.open("w")
        command = server_command(name, self.port, workers)
        self.process = subprocess.Popen(command, env=env, stdout=self.log, stderr=self.log)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        raise RuntimeError(f"the server did not become ready; see {log}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


def load(
    url: str,
    key: str,
    *,
    clients: int,
    requests: int,
    batch: int = 1,
    ceiling: bool = False,
    processes: int = 1,
) -> dict[str, Any]:
    output = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.load",
            "--url",
            url,
            "--key",
            key,
            "--clients",
            str(clients),
            "--requests",
            str(requests),
            "--batch",
            str(batch),
            "--processes",
            str(processes),
            *(["--ceiling"] if ceiling else []),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, Any] = json.loads(output)
    return result


TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def process_tree_cpu_s(root: int) -> float:
    """CPU seconds (user and system) of ``root`` and its descendants, read from ``/proc``."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone in between
            continue
        parents[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / TICKS_PER_S
    total = 0.0
    for pid, seconds in cpu.items():
        ancestor: int | None = pid
        while ancestor is not None and ancestor != root:
            ancestor = parents.get(ancestor)
        if ancestor == root:
            total += seconds
    return total


def postmaster_pid(data_dir: Path | None) -> int | None:
    if data_dir is None or not (data_dir / "postmaster.pid").exists():
        return None
    return int((data_dir / "postmaster.pid").read_text().split()[0])


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def with_cpu(run: Any, server: Server, postmaster: int | None, **arguments: Any) -> dict[str, Any]:
    """``load(**arguments)``, with the CPU each side spent per request meanwhile: the server
    (every worker), Postgres (every backend; absent on a server not started here) and the load
    process (a finished child of this one)."""
    server_0 = process_tree_cpu_s(server.process.pid)
    postgres_0 = 0.0 if postmaster is None else process_tree_cpu_s(postmaster)
    load_0 = children_cpu_s()
    result: dict[str, Any] = run(**arguments)
    requests = max(1, int(result.get("requests", 0)))
    per_request = {
        "server": (process_tree_cpu_s(server.process.pid) - server_0) * 1000 / requests,
        "load": (children_cpu_s() - load_0) * 1000 / requests,
    }
    if postmaster is not None:
        per_request["postgres"] = (process_tree_cpu_s(postmaster) - postgres_0) * 1000 / requests
    result["cpu_ms_per_request"] = {name: round(ms, 3) for name, ms in per_request.items()}
    load_average = os.getloadavg()
    result["load_average"] = [round(value, 2) for value in load_average]
    return result


def measure(
    server: Server,
    key: str,
    per_client: int,
    raw_1: float,
    raw_8: float,
    postmaster: int | None = None,
) -> dict[str, Any]:
    """One server shape: its HTTP ceiling (from one load process and from two, so that the load
    generator is seen not to be the bound), single appends from 8 clients and 1, batches."""
    try:
        common = {"url": server.url, "key": key, "clients": 8, "requests": per_client}
        ceiling_1 = with_cpu(load, server, postmaster, **common, ceiling=True)
        ceiling_2 = with_cpu(load, server, postmaster, **common, ceiling=True, processes=2)
        eight = with_cpu(load, server, postmaster, **common)
        eight_2 = with_cpu(load, server, postmaster, **common, processes=2)
        one = load(server.url, key, clients=1, requests=per_client * 2)
        batched = load(server.url, key, clients=1, requests=max(10, per_client // 10), batch=100)
    finally:
        server.stop()
    ceiling = max(ceiling_1["requests_per_s"], ceiling_2["requests_per_s"])
    appends = max(eight["messages_per_s"], eight_2["messages_per_s"])
    return {
        "http_ceiling_8_clients": ceiling_1,
        "http_ceiling_8_clients_2_processes": ceiling_2,
        "single_8_clients": eight,
        "single_8_clients_2_processes": eight_2,
        "single_1_client": one,
        "batch_100": batched,
        "ratio_8_clients_to_raw_8_threads": round(appends / raw_8, 3),
        "ratio_8_clients_to_http_ceiling": round(appends / ceiling, 3),
        "ratio_1_client_to_raw_1_thread": round(one["messages_per_s"] / raw_1, 3),
        "p99_over_p50_8_clients": round(eight["p99_ms"] / eight["p50_ms"], 2),
        "ratio_batch_to_single_8": round(batched["messages_per_s"] / appends, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer requests, one server shape")
    parser.add_argument(
        "--servers",
        default=",".join(SERVERS),
        help="comma-separated ASGI servers to measure (those not installed are skipped)",
    )
    args = parser.parse_args()
    per_client = 100 if args.quick else 250
    postgres = PostgresForTests.start()
    workdir = Path(tempfile.mkdtemp(prefix="wmbench-append-"))
    try:
        urls = postgres.create_app_database("wmbench")
        key = asyncio.run(operator_key(urls.app, "bench"))
        plain = urls.admin.replace("postgresql+psycopg://", "postgresql://")
        data_dir = postgres.data_dir or workdir
        report: dict[str, Any] = {"fsync_per_s_before": round(fsync_probe(data_dir), 1)}
        raw_1 = raw_insert_rate(plain, threads=1, per_thread=per_client * 2)
        raw_8 = raw_insert_rate(plain, threads=8, per_thread=per_client)
        report["raw_insert_commit_per_s"] = {
            "1_thread": round(raw_1, 1),
            "8_threads": round(raw_8, 1),
        }
        shapes = (
            [(1, True), (2, True)] if args.quick else [(1, False), (1, True), (2, False), (2, True)]
        )
        servers = [name for name in args.servers.split(",") if server_available(name)]
        report["servers"] = servers
        runs: list[dict[str, Any]] = []
        for name in servers:
            for workers, group_commit in shapes:
                env = {
                    **{k: v for k, v in os.environ.items() if not k.startswith("WORKMEM_")},
                    "DATABASE_URL": urls.app,
                    "WORKMEM_WORKER_ENABLED": "false",
                    "WORKMEM_GROUP_COMMIT": "true" if group_commit else "false",
                    "WORKMEM_LOG_LEVEL": "INFO",
                }
                log = workdir / f"{name}-{workers}-{group_commit}.log"
                server = Server(env, workers, log, name)
                runs.append(
                    measure(server, key, per_client, raw_1, raw_8, postmaster_pid(data_dir))
                )
                runs[-1].update(server=name, workers=workers, group_commit=group_commit)
        report["runs"] = runs
        report["fsync_per_s_after"] = round(fsync_probe(data_dir), 1)
        report["targets"] = {
            "ratio_8_clients_to_raw_8_threads": ">= 0.5 (stretch >= 1 with group commit)",
            "ratio_1_client_to_raw_1_thread": ">= 0.5",
            "p99_over_p50_8_clients": "<= 4",
            "ratio_batch_to_single_8": ">= 5",
        }
        print(json.dumps(report, indent=2))
    finally:
        postgres.stop()


if __name__ == "__main__":
    main()
