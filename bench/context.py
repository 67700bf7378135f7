"""Benchmark of context assembly and of reading an agent session, against history length.

Prints JSON: the median latency of ``GET /v1/sessions/{id}/context`` and ``GET /v1/sessions/{id}``
for agent sessions of 100, 10 000 and 100 000 messages that share the same live tail, the ratios
100 000 / 100 (DESIGN 15: at most 1.5 for the context, 1.2 for the session), the same context
recorded in the context ledger (``record=true``: one insert) and what recording costs per context,
and a primary-key select measured in the same run for reference. Starts its own embedded
Postgres; the histories are bulk-inserted in SQL (only the API path is timed, in process through
an ASGI transport).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
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
from app.wm.sections import SECTIONS, Section, render
from app.wm.tokens import count_tokens

SIZES = (100, 10_000, 100_000)
LIVE_TAIL = 50
"""Messages after the newest archive: the same in every history."""
ARCHIVE_SPAN = 40
MESSAGE_TOKENS = 40

WORKING_MEMORY = {
    Section.SESSION_TITLE: "Nightly reconciliation of the payments ledger",
    Section.CURRENT_STATE: "Comparing yesterday's settlement file with the ledger; 3 of 12 "
    "merchants checked, no mismatch so far.",
    Section.TASK_AND_GOALS: "\n".join(
        f"- Reconcile merchant group {n} and report differences above 0.01 EUR" for n in range(8)
    ),
    Section.KEY_FACTS: "\n".join(
        f"- Decided on step {n}: settlement files are UTF-8 CSV with a header row"
        for n in range(25)
    ),
    Section.FILES: "\n".join(f"- ledger/settlements/2024-05-{n + 1:02d}.csv" for n in range(20)),
    Section.ERRORS: "\n".join(
        f"- Step {n}: decimal parsing failed on '1.234,56'; fixed by the locale setting"
        for n in range(6)
    ),
    Section.OPEN_ISSUES: "\n".join(f"- Merchant {n} sends late files" for n in range(5)),
}


def _plain(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _section_row(position: int, section: Section) -> tuple[str, int, str, str, int]:
    body = WORKING_MEMORY[section]
    return (
        section.value,
        position,
        body,
        hashlib.sha256(body.encode()).hexdigest(),
        count_tokens(body),
    )


def build_history(url: str, tenant_id: uuid.UUID, messages: int) -> uuid.UUID:
    """One agent session of ``messages`` messages: archives of 40 (all done, each with its seven
    section rows) up to the live tail. Bulk SQL; the counters are set as the service keeps them."""
    agent_session_id = uuid.uuid4()
    archived = messages - LIVE_TAIL
    archive_count = -(-archived // ARCHIVE_SPAN)
    filler = " ".join(["ledger"] * (MESSAGE_TOKENS - 4))
    section_rows = [_section_row(position, section) for position, section in enumerate(SECTIONS, 1)]
    overview = render(WORKING_MEMORY)
    with psycopg.connect(_plain(url), autocommit=False) as connection:
        connection.execute(
            "INSERT INTO agent_sessions (tenant_id, agent_session_id, keep_recent_count, last_seq,"
            " archived_upto_seq, turn_count, pending_tokens, total_tokens, archived_tokens,"
            " archive_count) VALUES (%s, %s, 10, %s, %s, %s, 0, %s, %s, %s)",
            (
                tenant_id,
                agent_session_id,
                messages,
                archived,
                (messages + 1) // 2,
                messages * MESSAGE_TOKENS,
                archived * MESSAGE_TOKENS,
                archive_count,
            ),
        )
        connection.execute(
            "INSERT INTO messages (tenant_id, agent_session_id, seq, role, turn, message,"
            " token_count, content_text)"
            " SELECT %(t)s, %(s)s, n, r.role, (n + 1) / 2,"
            "  jsonb_build_object('role', r.role, 'content', 'message ' || n || ' ' || %(f)s),"
            "  %(tokens)s, 'message ' || n || ' ' || %(f)s"
            " FROM generate_series(1, %(n)s) AS n,"
            "  LATERAL (SELECT CASE WHEN n %% 2 = 1 THEN 'user' ELSE 'assistant' END AS role) r",
            {
                "t": tenant_id,
                "s": agent_session_id,
                "n": messages,
                "f": filler,
                "tokens": MESSAGE_TOKENS,
            },
        )
        connection.execute(
            "INSERT INTO archives (tenant_id, agent_session_id, archive_seq, start_seq, end_seq,"
            " status, attempt, overview, abstract, keep_recent_count, archived_tokens, wm_tokens,"
            " generator, finished_at, tail_start_seq, tail_end_seq, tail_message_count,"
            " tail_tokens)"
            " SELECT %(t)s, %(s)s, a, (a - 1) * %(span)s + 1, least(a * %(span)s, %(archived)s),"
            "  'done', 1, %(overview)s, 'Nightly reconciliation — step ' || a, 10,"
            "  (least(a * %(span)s, %(archived)s) - (a - 1) * %(span)s) * %(tokens)s,"
            "  %(wm)s, 'offline', now(),"
            "  least(a * %(span)s, %(archived)s) + 1, %(last)s,"
            "  %(last)s - least(a * %(span)s, %(archived)s),"
            "  (%(last)s - least(a * %(span)s, %(archived)s)) * %(tokens)s"
            " FROM generate_series(1, %(count)s) AS a",
            {
                "t": tenant_id,
                "s": agent_session_id,
                "span": ARCHIVE_SPAN,
                "archived": archived,
                "overview": overview,
                "tokens": MESSAGE_TOKENS,
                "count": archive_count,
                "last": messages,
                "wm": sum(row[4] for row in section_rows),
            },
        )
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO wm_section_versions (tenant_id, agent_session_id, archive_seq,"
                " section, position, content, content_sha256, token_count, item_count,"
                " op_applied, reason, generator)"
                " SELECT %s, %s, a, %s, %s, %s, %s, %s, 1, 'UPDATE', 'accepted', 'offline'"
                " FROM generate_series(1, %s) AS a",
                [(tenant_id, agent_session_id, *row, archive_count) for row in section_rows],
            )
        connection.commit()
    return agent_session_id


async def timed_ms(call: Callable[[int], Awaitable[None]], size: int) -> float:
    started = time.perf_counter()
    await call(size)
    return (time.perf_counter() - started) * 1000


async def measure(url: str, runs: int) -> dict[str, Any]:
    """``url`` is the owner's: it bulk-loads the histories; the service logs in as workmem_app."""
    database = Database.from_url(login_url(url), pool_size=4)
    async with database.unscoped() as db:
        tenant = await tenancy.create_tenant(db, "bench")
        _, key = await tenancy.issue_key(db, tenant.tenant_id, role=Role.READER)
    started = time.perf_counter()
    sessions = {size: build_history(url, tenant.tenant_id, size) for size in SIZES}
    with psycopg.connect(_plain(url), autocommit=True) as connection:
        connection.execute("ANALYZE")
    build_s = time.perf_counter() - started

    settings = Settings(
        database_url=login_url(url), admin_token=SecretStr("bench"), worker_enabled=False
    )
    app = create_app(settings, database=database)
    headers = {"Authorization": f"Bearer {key}"}
    context_ms: dict[int, list[float]] = {size: [] for size in SIZES}
    session_ms: dict[int, list[float]] = {size: [] for size in SIZES}
    recorded_ms: dict[int, list[float]] = {size: [] for size in SIZES}
    raw_ms: list[float] = []
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://bench"
        ) as http,
        await psycopg.AsyncConnection.connect(_plain(url), autocommit=True) as raw,
    ):

        async def context(size: int) -> None:
            response = await http.get(f"/v1/sessions/{sessions[size]}/context", headers=headers)
            response.raise_for_status()
            assert len(response.json()["messages"]) == LIVE_TAIL + 1

        async def recorded(size: int) -> None:
            response = await http.get(
                f"/v1/sessions/{sessions[size]}/context",
                params={"record": "true"},
                headers=headers,
            )
            response.raise_for_status()
            assert response.json()["context_id"] is not None

        async def session(size: int) -> None:
            response = await http.get(f"/v1/sessions/{sessions[size]}", headers=headers)
            response.raise_for_status()

        async def primary_key_select(size: int) -> None:
            await (
                await raw.execute(
                    "SELECT message FROM messages WHERE tenant_id = %s AND agent_session_id = %s"
                    " AND seq = %s",
                    (tenant.tenant_id, sessions[size], size),
                )
            ).fetchone()

        for size in SIZES:  # warm the pool, the key cache and the plans
            for _ in range(5):
                await context(size)
                await recorded(size)
                await session(size)
        # Rounds interleave the sizes, so a slow minute of the machine hits all of them alike.
        for _ in range(runs):
            for size in SIZES:
                context_ms[size].append(await timed_ms(context, size))
                recorded_ms[size].append(await timed_ms(recorded, size))
                session_ms[size].append(await timed_ms(session, size))
            raw_ms.append(await timed_ms(primary_key_select, SIZES[-1]))
    await database.dispose()

    def medians(samples: dict[int, list[float]]) -> dict[str, float]:
        return {str(size): round(statistics.median(values), 3) for size, values in samples.items()}

    context_median, session_median = medians(context_ms), medians(session_ms)
    recorded_median = medians(recorded_ms)
    small, large = str(SIZES[0]), str(SIZES[-1])
    return {
        "runs": runs,
        "live_tail_messages": LIVE_TAIL,
        "history_build_s": round(build_s, 1),
        "context_ms": context_median,
        "context_ratio_100000_vs_100": round(context_median[large] / context_median[small], 3),
        "context_ratio_target": 1.5,
        "context_recorded_ms": recorded_median,
        "record_cost_ms": {
            size: round(recorded_median[size] - context_median[size], 3) for size in context_median
        },
        "record_ratio_100000": round(recorded_median[large] / context_median[large], 3),
        "session_ms": session_median,
        "session_ratio_100000_vs_100": round(session_median[large] / session_median[small], 3),
        "session_ratio_target": 1.2,
        "raw_primary_key_select_ms": round(statistics.median(raw_ms), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=60, help="timed rounds per size")
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
