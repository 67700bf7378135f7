"""Benchmark of history search per query shape, in one agent session of 15 000 messages.

Prints JSON: p50 and p99 latency of ``GET /v1/sessions/{id}/history/search`` for each shape (one
common word, one rare word, three words, 24 words that are common alone and rare together, a
phrase, a word with an exclusion, an exclusion alone), and how many hits each found; beside each,
the same full-text statement run bare in SQL in the same run (``raw_statement``). The messages
are varied text over a fixed vocabulary (the same for every run), bulk-inserted in SQL
and analysed; then every shape is timed again right after ``--appends`` more messages went
through the append endpoint in batches of 100 (``after_appends``: nothing has vacuumed the
full-text index since; ``append_batch_of_100`` is those batches' own latency).
Only the API path is timed, in process through an ASGI transport. Starts its own embedded
Postgres.

    python -m bench.history_search [--messages 15000] [--runs 30] [--appends 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
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

COMMON = [
    "deploy", "billing", "service", "error", "request", "database", "retry", "timeout", "user",
    "ledger", "invoice", "payment", "queue", "worker", "config", "cache", "test", "build",
    "release", "merge", "branch", "commit", "review", "token", "session", "archive", "memory",
]  # fmt: skip
RARE = "zeppelin"
SHAPES = {
    "one_common_word": "billing",
    "one_rare_word": RARE,
    "three_words": "billing retry timeout",
    "24_words_and": " ".join(COMMON[:24]),
    "phrase": '"billing service"',
    "word_and_exclusion": "billing -timeout",
    "exclusion_only": "-billing",
}


def _plain(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def texts(count: int) -> list[str]:
    """Messages of 20-60 words: the common words, filler words, paths; one has the rare word."""
    rng = random.Random(15_000)
    filler = [f"word{n}" for n in range(3000)]
    found = []
    for n in range(count):
        words = rng.choices(COMMON, k=rng.randint(4, 12)) + rng.choices(
            filler, k=rng.randint(16, 48)
        )
        rng.shuffle(words)
        if n == count // 2:
            words.append(RARE)
        found.append(" ".join(words) + f" see app/services/billing_{n % 50}.py")
    return found


def load(url: str, tenant_id: uuid.UUID, agent_session_id: uuid.UUID, count: int) -> None:
    rows = [
        (tenant_id, agent_session_id, seq, "user" if seq % 2 else "assistant", (seq + 1) // 2,
         json.dumps({"role": "user", "content": body}), 60, body)
        for seq, body in enumerate(texts(count), start=1)
    ]  # fmt: skip
    with psycopg.connect(_plain(url), autocommit=True) as connection:
        with (
            connection.cursor() as cursor,
            cursor.copy(
                "COPY messages (tenant_id, agent_session_id, seq, role, turn, message, token_count,"
                " content_text) FROM STDIN"
            ) as copy,
        ):
            for row in rows:
                copy.write_row(row)
        connection.execute(
            "UPDATE agent_sessions SET last_seq = %s, turn_count = %s, total_tokens = %s"
            " WHERE tenant_id = %s AND agent_session_id = %s",
            (count, (count + 1) // 2, count * 60, tenant_id, agent_session_id),
        )
        connection.execute("ANALYZE")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def timed(
    http: httpx.AsyncClient, sid: str, headers: dict[str, str], runs: int
) -> dict[str, Any]:
    shapes: dict[str, Any] = {}
    # One untimed search first: the first statement of a new connection pays for the catalogue
    # and the function's plan (hundreds of ms on a loaded machine), which is not what a shape costs.
    warm = await http.get(
        f"/v1/sessions/{sid}/history/search", params={"q": "warm", "limit": 10}, headers=headers
    )
    warm.raise_for_status()
    for shape, query in SHAPES.items():
        timings: list[float] = []
        statuses: dict[int, int] = {}
        hits = 0
        for _ in range(runs):
            started = time.perf_counter()
            response = await http.get(
                f"/v1/sessions/{sid}/history/search",
                params={"q": query, "limit": 10},
                headers=headers,
            )
            timings.append((time.perf_counter() - started) * 1000)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            if response.status_code == 200:
                hits = len(response.json()["items"])
        shapes[shape] = {
            "query": query,
            "p50_ms": round(statistics.median(timings), 2),
            "p99_ms": round(percentile(timings, 0.99), 2),
            "hits": hits,
            "statuses": statuses,
        }
    return shapes


_RAW = """
    SELECT found.seq, ts_rank_cd(found.content_words, q.words, 1) AS rank
    FROM (SELECT websearch_to_tsquery('english', %(query)s) AS words) q,
         LATERAL (
            SELECT m.seq, m.content_words FROM messages m
            WHERE m.tenant_id = %(tenant_id)s AND m.agent_session_id = %(sid)s
              AND m.content_words @@ q.words
            ORDER BY m.seq DESC LIMIT 100
         ) AS found
    ORDER BY 2 DESC, found.seq DESC LIMIT 10
"""


def raw_timed(url: str, tenant_id: uuid.UUID, sid: str, runs: int) -> dict[str, Any]:
    """The same full-text statement run bare (no API, no row-level security, no snippet), per
    shape: the baseline each shape's API latency is read against, measured in the same run."""
    shapes: dict[str, Any] = {}
    with psycopg.connect(_plain(url), autocommit=True) as connection:
        for shape, query in SHAPES.items():
            timings: list[float] = []
            for _ in range(runs):
                started = time.perf_counter()
                connection.execute(
                    _RAW, {"query": query, "tenant_id": tenant_id, "sid": sid}
                ).fetchall()
                timings.append((time.perf_counter() - started) * 1000)
            shapes[shape] = {
                "p50_ms": round(statistics.median(timings), 2),
                "p99_ms": round(percentile(timings, 0.99), 2),
            }
    return shapes


async def measure(url: str, messages: int, runs: int, appends: int) -> dict[str, Any]:
    database = Database.from_url(login_url(url), pool_size=4)
    async with database.unscoped() as db:
        tenant = await tenancy.create_tenant(db, "bench")
        _, key = await tenancy.issue_key(db, tenant.tenant_id, role=Role.WRITER)
    settings = Settings(
        database_url=login_url(url), admin_token=SecretStr("bench"), worker_enabled=False
    )
    app = create_app(settings, database=database)
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://bench"
        ) as http,
    ):
        created = await http.post("/v1/sessions", json={}, headers=headers)
        created.raise_for_status()
        sid = created.json()["id"]
        load(url, tenant.tenant_id, uuid.UUID(sid), messages)
        shapes = await timed(http, sid, headers, runs)
        raw = raw_timed(url, tenant.tenant_id, sid, runs)
        # Heavy appends through the real append path, then the same searches at once.
        batch = 100
        bodies = texts(messages + appends)[messages:]
        batches: list[float] = []
        for start in range(0, appends, batch):
            started = time.perf_counter()
            appended = await http.post(
                f"/v1/sessions/{sid}/messages:batch",
                json={
                    "messages": [
                        {"role": "user", "content": b} for b in bodies[start : start + batch]
                    ]
                },
                headers=headers,
            )
            appended.raise_for_status()
            batches.append((time.perf_counter() - started) * 1000)
        after = await timed(http, sid, headers, runs)
        raw_after = raw_timed(url, tenant.tenant_id, sid, runs)
    await database.dispose()
    return {
        "messages": messages,
        "runs_per_shape": runs,
        "shapes": shapes,
        "appends": appends,
        "append_batch_of_100": {
            "p50_ms": round(statistics.median(batches), 2) if batches else None,
            "p99_ms": round(percentile(batches, 0.99), 2) if batches else None,
        },
        "after_appends": after,
        "raw_statement": raw,
        "raw_statement_after_appends": raw_after,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=15_000)
    parser.add_argument("--runs", type=int, default=30, help="timed searches per shape")
    parser.add_argument(
        "--appends", type=int, default=5_000, help="messages appended before the second pass"
    )
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
            result = asyncio.run(measure(url, args.messages, args.runs, args.appends))
        finally:
            server.cleanup()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
