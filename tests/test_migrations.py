"""Migrations: base → head → base → head on a fresh database, nothing left to autogenerate, and
the legacy upgrade frozen in its revision."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import psycopg
import pytest
from alembic import command
from alembic.script import ScriptDirectory
from alembic.script.revision import Revision, RevisionError
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
    versions = Path(migrations.__file__).resolve().parent.parent / "migrations" / "versions"
    names = [path.name for path in versions.glob("*.py")]
    assert names
    for name in names:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-\d{4}_[a-z0-9_]+\.py", name), name


VERSIONS = Path(migrations.__file__).resolve().parent.parent / "migrations" / "versions"

LEGACY_IDS = frozenset(
    {
        *("0001", "0002", "0003", "0004", "0005", "0007", "0008", "0009", "0010"),
        "20261201_2125_definer_path",
        "20261201_2135_atomic_quotas",
        "20261201_2145_tenant_tokens",
        "20261201_2146_fair_webhook_claim",
        "20261201_2200_bounded_history",
    }
)
"""Ids given before an id had to be its file's stem. Databases hold them, so they stay; this set
never grows."""


def declared(path: Path) -> tuple[str, str | None]:
    """A revision file's ``revision`` and ``down_revision``, read without running it."""
    found: dict[str, str | None] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            for target in targets:
                if isinstance(target, ast.Name) and target.id in ("revision", "down_revision"):
                    assert isinstance(node.value, ast.Constant), (path.name, target.id)
                    value = node.value.value
                    assert value is None or isinstance(value, str), (path.name, target.id)
                    found[target.id] = value
    assert "revision" in found, path.name
    assert "down_revision" in found, path.name
    revision = found["revision"]
    assert isinstance(revision, str), path.name
    return revision, found["down_revision"]


def chain_order(revisions: dict[str, str | None]) -> list[str]:
    """The ids from base to head; fails on a branch, a second base or a dangling parent."""
    children: dict[str | None, list[str]] = {}
    for revision, down in revisions.items():
        children.setdefault(down, []).append(revision)
    order: list[str] = []
    parent: str | None = None
    while parent in children:
        following = children[parent]
        assert len(following) == 1, f"{parent or 'base'} has more than one child: {following}"
        parent = following[0]
        order.append(parent)
    assert len(order) == len(revisions), f"not one chain: {sorted(set(revisions) - set(order))}"
    return order


@pytest.mark.parametrize(
    ("revisions", "order"),
    [
        ({"a": None}, ["a"]),
        ({"b": "a", "a": None, "c": "b"}, ["a", "b", "c"]),
        ({"a": None, "b": "a", "c": "a"}, None),  # a branch: two heads
        ({"a": None, "b": None}, None),  # two bases
        ({"a": None, "b": "x"}, None),  # a parent that is no revision
    ],
)
def test_the_chain_order_of_a_table(
    revisions: dict[str, str | None], order: list[str] | None
) -> None:
    if order is None:
        with pytest.raises(AssertionError):
            chain_order(revisions)
    else:
        assert chain_order(revisions) == order


def revision_id(stem: str) -> str:
    """A new revision's id: its file's stem, the date written without dashes (Alembic refuses
    ``-`` in an id, keeping it for relative revisions such as ``head-1``)."""
    day, _, rest = stem.partition("_")
    year, month, date, time = day.split("-")
    return f"{year}{month}{date}_{time}_{rest}"


@pytest.mark.parametrize(
    ("stem", "revision"),
    [
        ("2026-12-01-2215_slug", "20261201_2215_slug"),
        ("2027-01-09-0005_two_words", "20270109_0005_two_words"),
        ("2026-12-01-2135_atomic_quotas", "20261201_2135_atomic_quotas"),
    ],
)
def test_a_new_id_is_its_stem_without_dashes(stem: str, revision: str) -> None:
    assert revision_id(stem) == revision
    Revision.verify_rev_id(revision)
    with pytest.raises(RevisionError):
        Revision.verify_rev_id(stem)


def test_the_chain_runs_in_file_order_and_new_ids_are_file_stems() -> None:
    """Date-named files sort as they were written; the chain must follow them, and a new id is
    its file's stem, so two revisions can neither collide nor sort apart from their files."""
    files = sorted(VERSIONS.glob("*.py"))
    revisions = {path.stem: declared(path) for path in files}
    ids = {stem: revision for stem, (revision, _) in revisions.items()}
    chain = chain_order(dict(revisions.values()))
    assert chain == [ids[path.stem] for path in files]
    for stem, revision in ids.items():
        expected = revision_id(stem)
        assert revision in LEGACY_IDS or revision == expected, f"{stem}.py: use {expected!r}"
    script = ScriptDirectory.from_config(migrations.alembic_config())
    assert script.get_heads() == [chain[-1]]


ROOT = VERSIONS.parent.parent
DEFINED_BY = re.compile(r"`(workmem_[a-z_]+)\(…\)` \(defined by revision\s+`([^`]+)`")
LEGACY_POINTER = re.compile(r"\b(?:revision|migration)s?\s+0\d{3}\b", re.IGNORECASE)


def prose_and_code() -> dict[str, str]:
    """The docs, the README and the application's code: everything that may point at a revision
    (the revisions themselves excepted)."""
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    paths += sorted((ROOT / "app").rglob("*.py"))
    return {str(path.relative_to(ROOT)): path.read_text() for path in paths}


def test_docs_name_the_revision_that_defines_each_function_today() -> None:
    stems = [path.stem for path in sorted(VERSIONS.glob("*.py"))]
    texts = {path.stem: path.read_text() for path in sorted(VERSIONS.glob("*.py"))}
    pointers = [
        (name, stem, where)
        for where, text in prose_and_code().items()
        for name, stem in DEFINED_BY.findall(text)
    ]
    assert pointers, "docs/database.md names the revision of workmem_append"
    for name, stem, where in pointers:
        assert stem in stems, f"{where}: no revision {stem}"
        newest = [s for s in stems if f"{name}(" in texts[s]][-1]
        assert stem == newest, f"{where} says {name} is defined by {stem}; the newest is {newest}"


def test_nothing_points_at_a_revision_by_its_old_number() -> None:
    """Numbers do not say where a revision is nor whether a later one replaced it; a pointer
    names the revision's file stem."""
    found = {
        where: LEGACY_POINTER.findall(text)
        for where, text in prose_and_code().items()
        if LEGACY_POINTER.search(text)
    }
    assert found == {}


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
