"""Pins, provenance of working-memory items, and full-text search over the raw history.

``pins`` holds what an agent session must never lose (a text, or a message's exact text), with
who pinned and unpinned it and when; ``pin_events`` is the append-only record of every pin and
unpin (readable by auditors, beside the section history). ``wm_section_versions.sources`` holds
each item's message seqs. Messages get a GIN index over their text (paths and dotted names split
into words), searched through ``workmem_history_search``: a tenant-restricted ``SECURITY
DEFINER`` function, because row-level security keeps Postgres from using a GIN index for ``@@``.
The two indexes over existing tables are built ``CONCURRENTLY``, outside the revision's
transaction, so appends and commits go on while they build.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 16:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
DEFINER_ROLE = "workmem_definer"
AUDITOR_ROLE = "workmem_auditor"
CURRENT_TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::uuid"
AUDITOR_TENANT = (
    "(SELECT l.tenant_id FROM auditor_logins l WHERE l.login_role = session_user::text)"
)
NEW_TABLES = ("pins", "pin_events")

# The searchable text of a message: its first 100 000 characters (a tsvector has a size limit,
# and a megabyte of tool output is not read for words), with "/", "." and "\" read as spaces so
# that "app/models/user.py" and "sympy.core.basic" are words an agent can find.
MESSAGE_DOCUMENT = (
    "to_tsvector('english'::regconfig, translate(left(content_text, 100000), '/.\\', '   '))"
)
_INDEXES = (
    ("ix_messages_content_words", "messages", f"USING gin (({MESSAGE_DOCUMENT}))"),
    # The archive that holds a message: the first whose end_seq is not below its seq.
    (
        "ix_archives_tenant_id_agent_session_id_end_seq",
        "archives",
        "(tenant_id, agent_session_id, end_seq)",
    ),
)

HISTORY_SEARCH = "workmem_history_search(uuid, text, bigint, bigint, integer)"

# Row-level security evaluates a non-leakproof operator such as `@@` after its policy, row by
# row, so the GIN index would never serve it; this function reads as workmem_definer (whose
# policy on messages admits every row) and keeps to the transaction's tenant and one agent
# session. A custom plan per call: whether the index, the primary key or both serve best
# depends on how common the words are and how long the agent session is. Ranking is among the
# newest 1 000 matches in the range (narrow the range for older ones): a common word in a long
# history would otherwise be ranked over every message that has it.
HISTORY_SEARCH_FUNCTION = f"""
CREATE FUNCTION workmem_history_search(
    p_agent_session_id uuid, p_query text, p_from_seq bigint, p_to_seq bigint, p_limit integer
) RETURNS TABLE (seq bigint, rank real)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
SET plan_cache_mode = force_custom_plan
AS $$
BEGIN
    RETURN QUERY
    SELECT found.seq,
           ts_rank_cd(
               to_tsvector('english'::regconfig,
                           translate(left(found.content_text, 100000), '/.\\', '   ')),
               words, 1)
    FROM (
        SELECT m.seq, m.content_text
        FROM public.messages m
        WHERE m.tenant_id = {CURRENT_TENANT}
          AND m.agent_session_id = p_agent_session_id
          AND m.seq BETWEEN p_from_seq AND p_to_seq
          AND {MESSAGE_DOCUMENT.replace("content_text", "m.content_text")}
              @@ websearch_to_tsquery('english'::regconfig, p_query)
        ORDER BY m.seq DESC
        LIMIT 1000
    ) AS found, websearch_to_tsquery('english'::regconfig, p_query) AS words
    ORDER BY 2 DESC, found.seq DESC
    LIMIT p_limit;
END
$$
"""


def upgrade() -> None:
    # The index builds come first, each after dropping what an interrupted earlier run may have
    # left (an invalid index): the rest of the revision is one transaction, so a failure there
    # leaves nothing else behind and a second run starts clean.
    with op.get_context().autocommit_block():
        for name, table, columns in _INDEXES:
            op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
            op.execute(f"CREATE INDEX CONCURRENTLY {name} ON {table} {columns}")
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.add_column(
        "wm_section_versions",
        sa.Column(
            "sources",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'[]'::jsonb"),
            nullable=False,
        ),
    )
    op.create_table(
        "pins",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("pin_id", sa.UUID(), server_default=sa.text("gen_random_uuid()"), nullable=False),
        sa.Column("agent_session_id", sa.UUID(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("message_seq", sa.BigInteger(), nullable=True),
        sa.Column(
            "section",
            postgresql.ENUM(name="wm_section", create_type=False),
            nullable=True,
        ),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("pinned_by", sa.UUID(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("unpinned_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("unpinned_by", sa.UUID(), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            name=op.f("fk_pins_tenant_id_agent_sessions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id", "message_seq"],
            ["messages.tenant_id", "messages.agent_session_id", "messages.seq"],
            name=op.f("fk_pins_tenant_id_messages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "pin_id", name=op.f("pk_pins")),
    )
    op.create_index(
        "ix_pins_tenant_id_agent_session_id",
        "pins",
        ["tenant_id", "agent_session_id", "created_at"],
        unique=False,
    )
    op.create_table(
        "pin_events",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("event_id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("agent_session_id", sa.UUID(), nullable=False),
        sa.Column("pin_id", sa.UUID(), nullable=False),
        sa.Column("event", sa.String(length=8), nullable=False),
        sa.Column("actor", sa.UUID(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("message_seq", sa.BigInteger(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("event IN ('pin', 'unpin')", name=op.f("ck_pin_events_event")),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            name=op.f("fk_pin_events_tenant_id_agent_sessions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "pin_id"],
            ["pins.tenant_id", "pins.pin_id"],
            name=op.f("fk_pin_events_tenant_id_pins"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "event_id", name=op.f("pk_pin_events")),
    )
    op.create_index(
        "ix_pin_events_tenant_id_agent_session_id",
        "pin_events",
        ["tenant_id", "agent_session_id", "event_id"],
        unique=False,
    )
    for table in NEW_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
        )
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {APP_ROLE}")
    # Auditors read who pinned and unpinned what, beside the section history, for their tenant.
    op.execute(f"GRANT SELECT ON pin_events TO {AUDITOR_ROLE}")
    op.execute(
        f"CREATE POLICY auditor_read ON pin_events FOR SELECT TO {AUDITOR_ROLE} "
        f"USING (tenant_id = {AUDITOR_TENANT})"
    )
    op.execute(
        f"CREATE POLICY auditor_only_own_tenant ON pin_events AS RESTRICTIVE FOR SELECT "
        f"TO {AUDITOR_ROLE} USING (tenant_id = {AUDITOR_TENANT})"
    )
    op.execute(HISTORY_SEARCH_FUNCTION)
    op.execute(f"ALTER FUNCTION {HISTORY_SEARCH} OWNER TO {DEFINER_ROLE}")
    op.execute(f"REVOKE ALL ON FUNCTION {HISTORY_SEARCH} FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION {HISTORY_SEARCH} TO {APP_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(f"DROP FUNCTION {HISTORY_SEARCH}")
    op.execute(f"REVOKE SELECT ON pin_events FROM {AUDITOR_ROLE}")
    op.drop_index("ix_pin_events_tenant_id_agent_session_id", table_name="pin_events")
    op.drop_table("pin_events")
    op.drop_index("ix_pins_tenant_id_agent_session_id", table_name="pins")
    op.drop_table("pins")
    op.drop_column("wm_section_versions", "sources")
    with op.get_context().autocommit_block():
        for name, _, _ in reversed(_INDEXES):
            op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
