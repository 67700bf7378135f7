"""Migrations: base → head → base → head on a fresh database, nothing left to autogenerate, and
the legacy upgrade frozen in its revision."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

import psycopg
import pytest
from alembic import command
from sqlalchemy.engine import make_url

from app import migrations
from app.wm.items import split_items
from app.wm.sections import SECTIONS, parse, render
from app.wm.tokens import count_tokens
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


# The revision's frozen copy of the working-memory core ------------------------------------------

REVISION_0002 = (
    Path(migrations.__file__).resolve().parent.parent
    / "migrations"
    / "versions"
    / "2026-11-29-1500_archive_jobs_and_section_history.py"
)


def load_revision(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"revision_{path.stem[:15]}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found.add(node.module)
    return found


def test_the_legacy_upgrade_imports_nothing_from_the_application() -> None:
    imported = imported_modules(REVISION_0002)
    assert "sqlalchemy" in imported
    assert not {name for name in imported if name == "app" or name.startswith("app.")}


FROZEN_DOCUMENTS = [
    SEVEN_HEADERS,
    "Free text: the user likes tea.",
    "",
    "# Working Memory\n",
    "Preamble line\n# Working Memory\n## Session Title\nT\n## Notes\nkept aside\n## Open Issues\n- q",
    "## Session Title\nOld\n## Session Title\nappended duplicate",
    "## 3. Task & Goals (2):\n- Never deploy\n## **Open Issues**\n1) first\n2. second",
    "### Key Facts & Decisions\n- deep header\n### Flights\nbody text, not an item\n- item",
    "##Session Title\nno space\n# Notes\nlevel one\n#### Files & Context\n  - nested\n\t* tab",
    "## current   state\nlower case, spaced\r\n## Errors & Corrections:\r\n- E1\r\n",
    "## Files & Context\n- app/main.py\n\n\n- docs/x.md   \n## Task & Goals\n-\n- \n+ plus",
    "## Key Facts & Decisions\n- 会议 2024-05-20 决定\n- Café ünïcode\n## Open Issues (none)\n",
]


@pytest.mark.parametrize("document", FROZEN_DOCUMENTS)
def test_the_frozen_parser_agrees_with_the_working_memory_core(document: str) -> None:
    frozen = load_revision(REVISION_0002)
    today = parse(document)
    copy = frozen.parse(document)
    assert copy.sections == {section.value: body for section, body in today.sections.items()}
    assert copy.preamble == today.preamble
    assert [(e.heading, e.body) for e in copy.extra] == [(e.heading, e.body) for e in today.extra]
    assert copy.found == {section.value for section in today.found}
    assert frozen.render(copy.sections) == render(today.sections)
    for section, body in today.sections.items():
        assert frozen.split_items(body) == split_items(body), section
    assert frozen.split_items(document) == split_items(document)
    assert [frozen.count_tokens(body) for body in copy.sections.values()] == [
        count_tokens(body) for body in today.sections.values()
    ]


def test_the_frozen_copy_names_the_seven_sections_in_order() -> None:
    frozen = load_revision(REVISION_0002)
    assert tuple(section.value for section in SECTIONS) == frozen.SECTIONS
