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
