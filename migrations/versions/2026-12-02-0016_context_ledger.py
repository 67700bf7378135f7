"""The context ledger: one row per recorded context, naming what it was assembled from.

``context_records`` holds ids, seq ranges, options, token counts and hashes — never a copy of a
text: the archive and the content hash of each section version of the summary, the pins in force,
the recalled memories' ids and scores, the raw messages sent (as seq ranges), the cleared,
retracted and redacted seqs, the budget, and the sha256 of the messages and of the system-prompt
text. Row-level security like its neighbours; auditors read their tenant's rows, like the section
history. Deleting the agent session deletes its rows.

Revision ID: 20261202_0016_context_ledger
Revises: 20261201_2327_cleared_archives
Create Date: 2026-12-02 00:16:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261202_0016_context_ledger"
down_revision: str | None = "20261201_2327_cleared_archives"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
AUDITOR_ROLE = "workmem_auditor"
CURRENT_TENANT = "(SELECT workmem_verified_tenant())"
AUDITOR_TENANT = (
    "(SELECT l.tenant_id FROM auditor_logins l WHERE l.login_role = session_user::text)"
)
EMPTY_JSON_ARRAY = sa.text("'[]'::jsonb")
EMPTY_JSON_OBJECT = sa.text("'{}'::jsonb")
EMPTY_ARRAY = sa.text("'{}'")


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "context_records",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column(
            "context_id", sa.UUID(), server_default=sa.text("gen_random_uuid()"), nullable=False
        ),
        sa.Column("agent_session_id", sa.UUID(), nullable=False),
        sa.Column("recorded_by", sa.UUID(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("summary_archive_seq", sa.Integer(), nullable=True),
        sa.Column("summary_covered_end_seq", sa.BigInteger(), nullable=True),
        sa.Column(
            "summary_sections",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=EMPTY_JSON_ARRAY,
            nullable=False,
        ),
        sa.Column("summary_layer", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "pin_ids",
            postgresql.ARRAY(sa.UUID()),
            server_default=EMPTY_ARRAY,
            nullable=False,
        ),
        sa.Column("pins_sent", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "memories",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=EMPTY_JSON_ARRAY,
            nullable=False,
        ),
        sa.Column("tail_start_seq", sa.BigInteger(), nullable=True),
        sa.Column("tail_end_seq", sa.BigInteger(), nullable=True),
        sa.Column(
            "tail_ranges",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=EMPTY_JSON_ARRAY,
            nullable=False,
        ),
        sa.Column("filled_start_seq", sa.BigInteger(), nullable=True),
        sa.Column("filled_end_seq", sa.BigInteger(), nullable=True),
        sa.Column(
            "filled_ranges",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=EMPTY_JSON_ARRAY,
            nullable=False,
        ),
        sa.Column(
            "cleared_seqs",
            postgresql.ARRAY(sa.BigInteger()),
            server_default=EMPTY_ARRAY,
            nullable=False,
        ),
        sa.Column(
            "retracted_seqs",
            postgresql.ARRAY(sa.BigInteger()),
            server_default=EMPTY_ARRAY,
            nullable=False,
        ),
        sa.Column(
            "redacted_seqs",
            postgresql.ARRAY(sa.BigInteger()),
            server_default=EMPTY_ARRAY,
            nullable=False,
        ),
        sa.Column(
            "options",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=EMPTY_JSON_OBJECT,
            nullable=False,
        ),
        sa.Column(
            "tokens",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=EMPTY_JSON_OBJECT,
            nullable=False,
        ),
        sa.Column(
            "hint",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=EMPTY_JSON_OBJECT,
            nullable=False,
        ),
        sa.Column(
            "parts_sha256",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=EMPTY_JSON_OBJECT,
            nullable=False,
        ),
        sa.Column("message_count", sa.Integer(), nullable=False),
        sa.Column("messages_sha256", sa.String(length=64), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "source IN ('context', 'compact', 'openviking')",
            name=op.f("ck_context_records_source"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            name=op.f("fk_context_records_tenant_id_agent_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "context_id", name=op.f("pk_context_records")),
    )
    op.create_index(
        "ix_context_records_tenant_id_agent_session_id",
        "context_records",
        ["tenant_id", "agent_session_id", "created_at", "context_id"],
        unique=False,
    )
    op.execute("ALTER TABLE context_records ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE context_records FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON context_records "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT, DELETE ON context_records TO {APP_ROLE}")
    # Auditors read what each recorded context was made of, beside the section history.
    op.execute(f"GRANT SELECT ON context_records TO {AUDITOR_ROLE}")
    op.execute(
        f"CREATE POLICY auditor_read ON context_records FOR SELECT TO {AUDITOR_ROLE} "
        f"USING (tenant_id = {AUDITOR_TENANT})"
    )
    op.execute(
        "CREATE POLICY auditor_only_own_tenant ON context_records AS RESTRICTIVE FOR SELECT "
        f"TO {AUDITOR_ROLE} USING (tenant_id = {AUDITOR_TENANT})"
    )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(f"REVOKE SELECT ON context_records FROM {AUDITOR_ROLE}")
    op.drop_index("ix_context_records_tenant_id_agent_session_id", table_name="context_records")
    op.drop_table("context_records")
