"""Import of an OpenViking workspace scaled up to 1 000 sessions, generated from the sample.

Prints JSON: the wall time of reading and converting the files alone, of the dry run, of the
import and of an idempotent re-run, with sessions and messages per second; and, as the same
run's reference for the disk, the raw psycopg time to insert the same message rows into a bare
table with one transaction per session. ``ratio_import_to_raw_insert`` is what the import costs
over those bare inserts (archives, section rows, counters and token counts included).

    python -m bench.import_openviking [SESSIONS]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from app.db import Database
from app.importer.openviking.reader import find_sessions, read_session
from app.importer.openviking.run import ImportOptions, import_workspace
from app.importer.openviking.summary import SessionOutcome, Summary
from app.sessions.service import Limits
from app.tenancy import service as tenancy
from tests.support.openviking import scaled_workspace
from tests.support.postgres import PostgresForTests

USERS = 4


class Quiet:
    def started(self, total: int) -> None:
        pass

    def finished(self, outcome: SessionOutcome) -> None:
        pass


async def timed_import(
    database: Database, options: ImportOptions, limits: Limits
) -> tuple[float, Summary]:
    started = time.perf_counter()
    summary = await import_workspace(database, options, limits, Quiet())
    return time.perf_counter() - started, summary


def read_only(workspace: Path, limits: Limits) -> float:
    started = time.perf_counter()
    refs, _ = find_sessions(workspace)
    for ref in refs:
        read_session(ref, base=workspace, max_message_bytes=limits.max_message_bytes)
    return time.perf_counter() - started


def raw_inserts(plain_url: str) -> float:
    """The imported message rows again, into a bare table: one transaction per session."""
    with psycopg.connect(plain_url) as connection:
        connection.execute(
            "CREATE TABLE raw_messages (session uuid, seq bigint, message jsonb,"
            " PRIMARY KEY (session, seq))"
        )
        connection.commit()
        by_session: dict[Any, list[tuple[Any, int, Any]]] = defaultdict(list)
        for session, seq, message in connection.execute(
            "SELECT agent_session_id, seq, message FROM messages ORDER BY 1, 2"
        ):
            by_session[session].append((session, seq, Jsonb(message)))
        started = time.perf_counter()
        for rows in by_session.values():
            with connection.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO raw_messages (session, seq, message) VALUES (%s, %s, %s)", rows
                )
            connection.commit()
        return time.perf_counter() - started


async def main(sessions: int) -> None:
    limits = Limits()
    postgres = PostgresForTests.start()
    try:
        with tempfile.TemporaryDirectory(prefix="wmov") as scratch:
            workspace = scaled_workspace(Path(scratch) / "ws", sessions, users=USERS)
            urls = postgres.create_app_database("wmbenchimport")
            url = urls.app
            database = Database.from_url(url, pool_size=2)
            async with database.unscoped() as db:
                tenant = await tenancy.create_tenant(db, "bench")
            options = ImportOptions(workspace, tenant.tenant_id)
            read_s = read_only(workspace, limits)
            dry_s, dry = await timed_import(
                database, ImportOptions(workspace, tenant.tenant_id, dry_run=True), limits
            )
            import_s, summary = await timed_import(database, options, limits)
            rerun_s, rerun = await timed_import(database, options, limits)
            await database.dispose()
            raw_s = raw_inserts(urls.admin.replace("postgresql+psycopg://", "postgresql://"))
    finally:
        postgres.stop()
    figures = summary.figures()
    assert figures == dry.figures()
    assert figures["agent_sessions"]["imported"] == sessions
    assert rerun.figures()["agent_sessions"]["already_imported"] == sessions
    stored = figures["messages"]["stored"]
    print(
        json.dumps(
            {
                "sessions": sessions,
                "users": USERS,
                "openviking_messages": figures["messages"]["openviking"],
                "stored_messages": stored,
                "archives": figures["archives"],
                "working_memory": figures["working_memory"],
                "tool_parts": figures["tool_parts"],
                "problems": len(summary.problems),
                "read_and_convert_s": round(read_s, 2),
                "dry_run_s": round(dry_s, 2),
                "import_s": round(import_s, 2),
                "rerun_s": round(rerun_s, 2),
                "import_sessions_per_s": round(sessions / import_s, 1),
                "import_messages_per_s": round(stored / import_s, 1),
                "raw_insert_s": round(raw_s, 2),
                "ratio_import_to_raw_insert": round(import_s / raw_s, 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
