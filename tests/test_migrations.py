"""Migrations: base → head → base → head on a fresh database, and nothing left to autogenerate."""

from __future__ import annotations

import psycopg
import pytest
from alembic import command
from sqlalchemy.engine import make_url

from app import migrations
from tests.support.postgres import PostgresForTests


def tables(url: str) -> set[str]:
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as connection:
        rows = connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        ).fetchall()
    return {row[0] for row in rows}


def rls_tables(url: str) -> set[str]:
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as connection:
        rows = connection.execute(
            "SELECT relname FROM pg_class WHERE relrowsecurity AND relkind = 'r'"
        ).fetchall()
    return {row[0] for row in rows}


@pytest.fixture(scope="module")
def fresh_url(postgres: PostgresForTests) -> str:
    return postgres.create_database("wmmig")


def test_round_trip_and_check(fresh_url: str) -> None:
    owned = {"tenants", "api_keys", "agent_sessions", "messages", "archives"}
    migrations.upgrade(fresh_url)
    assert owned <= tables(fresh_url)
    assert owned <= rls_tables(fresh_url)
    migrations.downgrade(fresh_url, "base")
    assert tables(fresh_url) == {"alembic_version"}
    migrations.upgrade(fresh_url)
    assert owned <= tables(fresh_url)
    command.check(migrations.alembic_config(fresh_url))


def test_revision_files_are_date_named() -> None:
    import re
    from pathlib import Path

    versions = Path(migrations.__file__).resolve().parent.parent / "migrations" / "versions"
    names = [path.name for path in versions.glob("*.py")]
    assert names
    for name in names:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-\d{4}_[a-z0-9_]+\.py", name), name


SEVEN_HEADERS = """# Working Memory

## Session Title
Deploy the billing service

## Current State
Waiting for the staging run.

## Task & Goals
- Never deploy on Fridays

## Key Facts & Decisions
- Chose Postgres 16 because of pgvector

## Files & Context
- services/billing/app.py

## Errors & Corrections
- ImportError: no module named stripe

## Open Issues
- Who owns the on-call rota?
"""


def run_sql(url: str, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as connection:
        cursor = connection.execute(sql.encode(), params)
        rows: list[tuple[object, ...]] = cursor.fetchall() if cursor.description else []
        return rows


def test_legacy_overviews_are_upgraded_and_rendered_back(postgres: PostgresForTests) -> None:
    url = postgres.create_database("wmlegacy")
    migrations.upgrade(url, "0001")
    tenant = run_sql(url, "INSERT INTO tenants (name) VALUES ('legacy') RETURNING tenant_id")[0][0]
    session = run_sql(
        url,
        "INSERT INTO agent_sessions (tenant_id, last_seq) VALUES (%s, 30) RETURNING agent_session_id",
        (tenant,),
    )[0][0]
    for archive_seq, overview in [
        (1, SEVEN_HEADERS),
        (2, "Free text: the user likes tea."),
        (3, None),
    ]:
        run_sql(
            url,
            "INSERT INTO archives (tenant_id, agent_session_id, archive_seq, start_seq, end_seq,"
            " overview) VALUES (%s, %s, %s, %s, %s, %s)",
            (tenant, session, archive_seq, archive_seq * 10 - 9, archive_seq * 10, overview),
        )

    migrations.upgrade(url)
    rows = run_sql(
        url,
        "SELECT section::text, op_applied, reason, content FROM wm_section_versions"
        " WHERE archive_seq = 1 ORDER BY position",
    )
    assert [row[1] for row in rows] == ["IMPORT"] * 7
    assert rows[0][3] == "Deploy the billing service"
    assert rows[4][3] == "- services/billing/app.py"
    statuses = run_sql(
        url,
        "SELECT archive_seq, status, is_legacy, legacy_overview FROM archives ORDER BY archive_seq",
    )
    assert statuses == [
        (1, "done", False, None),
        (2, "done", True, "Free text: the user likes tea."),
        (3, "failed", False, None),
    ]
    assert run_sql(url, "SELECT count(*) FROM wm_section_versions WHERE archive_seq <> 1") == [(0,)]
    assert run_sql(url, "SELECT count(*) FROM wm_current_sections") == [(0,)]
    assert run_sql(url, "SELECT count(*) FROM wm_guard_events") == [(0,)]

    migrations.downgrade(url, "0001")
    overviews = run_sql(url, "SELECT archive_seq, overview FROM archives ORDER BY archive_seq")
    assert overviews[0][1] == SEVEN_HEADERS.rstrip() + "\n"
    assert overviews[1][1] == "Free text: the user likes tea."
    assert overviews[2][1] is None
