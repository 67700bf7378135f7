"""The load generator of the append benchmark, run as its own process against a real server.

``python -m bench.load --url URL --key KEY --clients 8 --requests 200 [--batch 100]`` creates one
agent session per client, warms each connection up, then appends as fast as the server answers
(keep-alive connections, one request in flight per client) and prints JSON: messages/s, requests
and their latency percentiles.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

import httpx


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


async def run(
    url: str, key: str, clients: int, requests: int, batch: int, *, ceiling: bool = False
) -> dict[str, object]:
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=60) as http:
        sessions = []
        for _ in range(clients):
            created = await http.post("/v1/sessions", json={})
            created.raise_for_status()
            sessions.append(created.json()["id"])
        latencies: list[float] = []

        async def client(agent_session_id: str, count: int, record: bool) -> None:
            for n in range(count):
                started = time.perf_counter()
                if ceiling:
                    response = await http.get("/healthz")
                    response.status_code = 201 if response.status_code == 200 else 500
                elif batch > 1:
                    body = {
                        "messages": [
                            {"role": "user", "content": f"m {n} {i}"} for i in range(batch)
                        ]
                    }
                    response = await http.post(
                        f"/v1/sessions/{agent_session_id}/messages:batch", json=body
                    )
                else:
                    response = await http.post(
                        f"/v1/sessions/{agent_session_id}/messages",
                        json={"role": "user", "content": f"message {n} of the benchmark"},
                    )
                if response.status_code != 201:
                    raise RuntimeError(f"append answered {response.status_code}: {response.text}")
                if record:
                    latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(client(s, 5, record=False) for s in sessions))
        started = time.perf_counter()
        await asyncio.gather(*(client(s, requests, record=True) for s in sessions))
        elapsed = time.perf_counter() - started
    total = clients * requests
    return {
        "clients": clients,
        "requests": total,
        "messages_per_request": 0 if ceiling else batch,
        "messages_per_s": round(total * (0 if ceiling else batch) / elapsed, 1),
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
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="GET /healthz instead: what this client and the HTTP stack manage with no work",
    )
    args = parser.parse_args()
    try:  # the cheaper event loop, when installed: the load generator shares the machine
        import uvloop
    except ImportError:
        runner = asyncio.run
    else:
        runner = uvloop.run
    result = runner(
        run(args.url, args.key, args.clients, args.requests, args.batch, ceiling=args.ceiling)
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
