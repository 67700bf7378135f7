"""Benchmark of forking an agent session: the cost must not grow with the history.

Prints JSON: the latency (p50, p99) of ``POST /v1/sessions/{id}:fork`` on an agent session of
100 messages and on one of 100 000 (one archive per 100 messages, each done with its seven
section rows), forking at the newest archive, at the middle one and at the last message, and
of ``GET …/context?fill=true&token_budget=16000`` on a fork (its reads follow the lineage into
the parent) and on its parent; with the ratios of the long session's figures to the short
one's, and of the fork's context to its parent's. The histories are bulk-inserted in SQL; only
the API path is timed, in process through an ASGI transport. Starts its own embedded Postgres.

    python -m bench.fork [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psycopg
from asgi_lifespan import LifespanManager
from pydantic import SecretStr
from sqlalchemy.engine import make_url

from app import migrations
from app.config import Settings
from app.db import Database, login_url, normalize_url
from app.main import create_app
from app.tenancy import service as tenancy
from app.tenancy.principal import Role

SIZES = (100, 100_000)
PER_ARCHIVE = 100
TOKENS = 12


def _plain(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def load(url: str, tenant_id: uuid.UUID, agent_session_id: uuid.UUID, count: int) -> None:
    """``count`` messages and ``count / 100`` done archives with their section rows."""
    archives = count // PER_ARCHIVE
    with psycopg.connect(_plain(url), autocommit=True) as connection:
        with (
            connection.cursor() as cursor,
            cursor.copy(
                "COPY messages (tenant_id, agent_session_id, seq, role, turn, message, token_count,"
                " content_text) FROM STDIN"
            ) as copy,
        ):
            for seq in range(1, count + 1):
                body = f"message {seq}: the billing retry needs a timeout of {seq % 90} s"
                role = "user" if seq % 2 else "assistant"
                message = json.dumps({"role": role, "content": body})
                copy.write_row(
                    (tenant_id, agent_session_id, seq, role, (seq + 1) // 2, message, TOKENS, body)
                )
        connection.execute(
            "INSERT INTO archives (tenant_id, agent_session_id, archive_seq, start_seq, end_seq,"
            " status, generator, overview, abstract, archived_tokens, keep_recent_count,"
            " wm_tokens, finished_at)"
            " SELECT %s, %s, a, (a - 1) * %s + 1, a * %s, 'done', 'offline', 'overview',"
            " 'abstract ' || a, %s, 0, 70, now() FROM generate_series(1, %s) a",
            (tenant_id, agent_session_id, PER_ARCHIVE, PER_ARCHIVE, PER_ARCHIVE * TOKENS,
             archives),
        )  # fmt: skip
        connection.execute(
            "INSERT INTO wm_section_versions (tenant_id, agent_session_id, archive_seq, section,"
            " position, content, content_sha256, token_count, item_count, op_applied, reason,"
            " generator)"
            " SELECT %s, %s, a, s.section, s.position, '- item of archive ' || a,"
            " md5(a::text), 10, 1, 'UPDATE', 'accepted', 'offline'"
            " FROM generate_series(1, %s) a,"
            " unnest(enum_range(NULL::wm_section)) WITH ORDINALITY AS s(section, position)",
            (tenant_id, agent_session_id, archives),
        )
        connection.execute(
            "UPDATE agent_sessions SET last_seq = %s, archived_upto_seq = %s, turn_count = %s,"
            " total_tokens = %s, archived_tokens = %s, archive_count = %s, keep_recent_count = 0"
            " WHERE tenant_id = %s AND agent_session_id = %s",
            (count, count, (count + 1) // 2, count * TOKENS, count * TOKENS, archives, tenant_id,
             agent_session_id),
        )  # fmt: skip
        connection.execute("ANALYZE")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def figures(timings: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(timings), 3),
        "p99_ms": round(percentile(timings, 0.99), 3),
    }


SHAPES = ("fork_at_newest_archive", "fork_at_middle_archive", "fork_at_last_seq")


def bodies(size: int) -> dict[str, dict[str, int]]:
    archives = size // PER_ARCHIVE
    return {
        "fork_at_newest_archive": {"at_archive": archives},
        "fork_at_middle_archive": {"at_archive": max(1, archives // 2)},
        "fork_at_last_seq": {"at_seq": size},
    }


async def fork_ms(
    http: httpx.AsyncClient, sid: str, body: dict[str, int], headers: dict[str, str]
) -> tuple[float, str]:
    started = time.perf_counter()
    response = await http.post(f"/v1/sessions/{sid}:fork", json=body, headers=headers)
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed, str(response.json()["id"])


async def context_ms(http: httpx.AsyncClient, sid: str, headers: dict[str, str]) -> float:
    started = time.perf_counter()
    response = await http.get(
        f"/v1/sessions/{sid}/context",
        params={"fill": "true", "token_budget": 16000},
        headers=headers,
    )
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed


async def measure(url: str, runs: int) -> dict[str, Any]:
    database = Database.from_url(login_url(url), pool_size=4)
    async with database.unscoped() as db:
        tenant = await tenancy.create_tenant(db, "bench")
        _, key = await tenancy.issue_key(db, tenant.tenant_id, role=Role.WRITER)
    settings = Settings(
        database_url=login_url(url), admin_token=SecretStr("bench"), worker_enabled=False
    )
    app = create_app(settings, database=database)
    headers = {"Authorization": f"Bearer {key}"}
    result: dict[str, Any] = {"runs": runs, "messages_per_archive": PER_ARCHIVE}
    timings: dict[int, dict[str, list[float]]] = {size: {} for size in SIZES}
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://bench"
        ) as http,
    ):
        parents: dict[int, str] = {}
        forks: dict[int, str] = {}
        for size in SIZES:
            created = await http.post("/v1/sessions", json={}, headers=headers)
            created.raise_for_status()
            parents[size] = created.json()["id"]
            load(url, tenant.tenant_id, uuid.UUID(parents[size]), size)
            # Warm the connection pool and the plans once, untimed.
            _, forks[size] = await fork_ms(
                http, parents[size], bodies(size)["fork_at_newest_archive"], headers
            )
            await context_ms(http, forks[size], headers)
        # The sizes take turns, run after run: a busy moment of the machine falls on both.
        for _ in range(runs):
            for size in SIZES:
                for shape, body in bodies(size).items():
                    elapsed, _fork = await fork_ms(http, parents[size], body, headers)
                    timings[size].setdefault(shape, []).append(elapsed)
                timings[size].setdefault("context_of_fork", []).append(
                    await context_ms(http, forks[size], headers)
                )
                timings[size].setdefault("context_of_parent", []).append(
                    await context_ms(http, parents[size], headers)
                )
    await database.dispose()
    for size in SIZES:
        result[f"{size}_messages"] = {
            "archives": size // PER_ARCHIVE,
            **{name: figures(values) for name, values in timings[size].items()},
        }
    short, long = (result[f"{size}_messages"] for size in SIZES)
    result["ratio_long_to_short"] = {
        name: round(long[name]["p50_ms"] / short[name]["p50_ms"], 3) for name in SHAPES
    }
    result["ratio_fork_context_to_parent"] = {
        f"{size}_messages": round(
            result[f"{size}_messages"]["context_of_fork"]["p50_ms"]
            / result[f"{size}_messages"]["context_of_parent"]["p50_ms"],
            3,
        )
        for size in SIZES
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=30, help="timed forks per shape and size")
    args = parser.parse_args()
    from app.embedded import postgres_server

    with tempfile.TemporaryDirectory(prefix="wmbench") as tmp:
        server = postgres_server(Path(tmp) / "pg", cleanup_mode="delete")
        try:
            base = normalize_url(server.get_uri("postgres"))
            with psycopg.connect(_plain(base), autocommit=True) as connection:
                connection.execute("CREATE DATABASE wmbench")
            url = make_url(base).set(database="wmbench").render_as_string(hide_password=False)
            migrations.upgrade(url)
            result = asyncio.run(measure(url, args.runs))
        finally:
            server.cleanup()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
