"""The load generator of the append benchmark, run as its own process against a real server.

``python -m bench.load --url URL --key KEY --clients 8 --requests 200 [--batch 100]
[--processes 2]`` creates one agent session per client, warms each connection up, then appends
as fast as the server answers (keep-alive connections, one request in flight per client) and
prints JSON: messages/s, requests and their latency percentiles.

The clients speak HTTP/1.1 themselves over asyncio streams (a request is one write of
pre-built bytes, an answer is read by its ``Content-Length``): a general client library costs
more CPU per request than a light server spends, and on a small machine the load generator
would then measure itself. ``--processes`` spreads the clients over that many processes, to
check that one process is not the bound (the figures should not move when it is raised).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import time
from urllib.parse import urlsplit

import httpx


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


class Connection:
    """One keep-alive HTTP/1.1 connection, one request in flight."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, host: str, port: int) -> Connection:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    async def send(self, request: bytes) -> tuple[int, bytes]:
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        body = await self.reader.readexactly(length) if length else b""
        return status, body

    def close(self) -> None:
        self.writer.close()


def request_bytes(method: str, path: str, host: str, key: str, body: bytes | None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", f"Authorization: Bearer {key}"]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


async def run(
    url: str, key: str, clients: int, requests: int, batch: int, *, ceiling: bool = False
) -> dict[str, object]:
    target = urlsplit(url)
    host, port = target.hostname or "127.0.0.1", target.port or 80
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        sessions = []
        for _ in range(clients):
            created = await http.post("/v1/sessions", json={})
            created.raise_for_status()
            sessions.append(created.json()["id"])
    latencies: list[float] = []

    def request_for(agent_session_id: str, n: int) -> bytes:
        if ceiling:
            return request_bytes("GET", "/healthz", host, key, None)
        if batch > 1:
            messages = [{"role": "user", "content": f"m {n} {i}"} for i in range(batch)]
            return request_bytes(
                "POST",
                f"/v1/sessions/{agent_session_id}/messages:batch",
                host,
                key,
                json.dumps({"messages": messages}).encode(),
            )
        return request_bytes(
            "POST",
            f"/v1/sessions/{agent_session_id}/messages",
            host,
            key,
            json.dumps({"role": "user", "content": f"message {n} of the benchmark"}).encode(),
        )

    expected = 200 if ceiling else 201
    connections = [await Connection.open(host, port) for _ in sessions]

    async def client(
        connection: Connection, agent_session_id: str, count: int, record: bool
    ) -> None:
        prepared = [request_for(agent_session_id, n) for n in range(count)]
        for request in prepared:
            started = time.perf_counter()
            status, body = await connection.send(request)
            if status != expected:
                raise RuntimeError(f"the server answered {status}: {body[:300]!r}")
            if record:
                latencies.append(time.perf_counter() - started)

    pairs = list(zip(connections, sessions, strict=True))
    await asyncio.gather(*(client(c, s, 5, record=False) for c, s in pairs))
    window_start = time.time()
    started = time.perf_counter()
    await asyncio.gather(*(client(c, s, requests, record=True) for c, s in pairs))
    elapsed = time.perf_counter() - started
    window_end = time.time()
    for connection in connections:
        connection.close()
    total = clients * requests
    return {
        "clients": clients,
        "requests": total,
        "messages_per_request": 0 if ceiling else batch,
        "messages_per_s": round(total * (0 if ceiling else batch) / elapsed, 1),
        "requests_per_s": round(total / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
        "latencies": latencies,
        "window": [window_start, window_end],
    }


def _run_one(args: tuple[str, str, int, int, int, bool]) -> dict[str, object]:
    url, key, clients, requests, batch, ceiling = args
    try:  # the cheaper event loop, when installed: the load generator shares the machine
        import uvloop
    except ImportError:
        return asyncio.run(run(url, key, clients, requests, batch, ceiling=ceiling))
    return uvloop.run(run(url, key, clients, requests, batch, ceiling=ceiling))


def combined(parts: list[dict[str, object]], batch: int, ceiling: bool) -> dict[str, object]:
    """One result for clients spread over processes: every request over the span from the
    first process's start to the last one's finish (an underestimate when they start apart)."""
    latencies: list[float] = []
    starts: list[float] = []
    ends: list[float] = []
    for part in parts:
        samples, window = part["latencies"], part["window"]
        assert isinstance(samples, list)
        assert isinstance(window, list)
        latencies += samples
        starts.append(window[0])
        ends.append(window[1])
    elapsed = max(ends) - min(starts)
    total = len(latencies)
    per_request = 0 if ceiling else batch
    return {
        "clients": sum(int(str(part["clients"])) for part in parts),
        "processes": len(parts),
        "requests": total,
        "messages_per_request": per_request,
        "messages_per_s": round(total * per_request / elapsed, 1),
        "requests_per_s": round(total / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=200, help="per client")
    parser.add_argument("--batch", type=int, default=1, help="messages per request")
    parser.add_argument("--processes", type=int, default=1, help="processes sharing the clients")
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="GET /healthz instead: what this client and the HTTP stack manage with no work",
    )
    args = parser.parse_args()
    processes = max(1, min(args.processes, args.clients))
    shares = [args.clients // processes + (n < args.clients % processes) for n in range(processes)]
    jobs = [
        (args.url, args.key, share, args.requests, args.batch, args.ceiling) for share in shares
    ]
    if processes == 1:
        part = _run_one(jobs[0])
        part.pop("latencies")
        part.pop("window")
        part["processes"] = 1
        print(json.dumps(part))
        return
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        parts = pool.map(_run_one, jobs)
    print(json.dumps(combined(parts, args.batch, args.ceiling)))


if __name__ == "__main__":
    main()
