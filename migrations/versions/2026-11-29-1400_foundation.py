"""Foundation: tenants, API keys, agent sessions, messages, archives (legacy overview shape).

Creates the pgvector extension, the non-superuser application role, and row-level security on
every tenant-owned table. Archives carry one free-text ``overview`` per archive, the shape that a
file-based store starts from and that later revisions upgrade.

Revision ID: 0001
Revises:
Create Date: 2026-11-29 14:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


APP_ROLE = "workmem_app"
TENANT_TABLES = ("tenants", "api_keys", "agent_sessions", "messages", "archives")
CURRENT_TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::uuid"


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    # Roles are cluster-wide: another database of the same cluster may have created it already.
    op.execute(
        f"""
        DO $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                CREATE ROLE {APP_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS;
            END IF;
            IF NOT pg_has_role(current_user, '{APP_ROLE}', 'MEMBER') THEN
                EXECUTE format('GRANT {APP_ROLE} TO %I', current_user);
            END IF;
        END
        $$
        """
    )
    op.execute(f"GRANT USAGE ON SCHEMA public TO {APP_ROLE}")
    op.create_table(
        "tenants",
        sa.Column(
            "tenant_id", sa.UUID(), server_default=sa.text("gen_random_uuid()"), nullable=False
        ),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_tenants")),
    )
    op.create_table(
        "agent_sessions",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column(
            "agent_session_id",
            sa.UUID(),
            server_default=sa.text("gen_random_uuid()"),
            nullable=False,
        ),
        sa.Column("external_id", sa.Text(), nullable=True),
        sa.Column("user_id", sa.Text(), nullable=True),
        sa.Column("agent_id", sa.Text(), nullable=True),
        sa.Column(
            "metadata",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("keep_recent_count", sa.Integer(), server_default=sa.text("10"), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "archived_upto_seq", sa.BigInteger(), server_default=sa.text("0"), nullable=False
        ),
        sa.Column("turn_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("pending_tokens", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("total_tokens", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("archive_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "archived_upto_seq <= last_seq", name=op.f("ck_agent_sessions_archived_upto_seq")
        ),
        sa.CheckConstraint(
            "keep_recent_count BETWEEN 0 AND 10000",
            name=op.f("ck_agent_sessions_keep_recent_count"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.tenant_id"],
            name=op.f("fk_agent_sessions_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "agent_session_id", name=op.f("pk_agent_sessions")),
        sa.UniqueConstraint(
            "tenant_id", "external_id", name=op.f("uq_agent_sessions_tenant_id_external_id")
        ),
    )
    op.create_index(
        "ix_agent_sessions_tenant_id_created_at",
        "agent_sessions",
        ["tenant_id", "created_at", "agent_session_id"],
        unique=False,
    )
    op.create_index(
        "ix_agent_sessions_tenant_id_user_id",
        "agent_sessions",
        ["tenant_id", "user_id"],
        unique=False,
    )
    op.create_table(
        "api_keys",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column(
            "api_key_id", sa.UUID(), server_default=sa.text("gen_random_uuid()"), nullable=False
        ),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("secret_sha256", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("user_id", sa.Text(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("role IN ('admin', 'writer', 'reader')", name=op.f("ck_api_keys_role")),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.tenant_id"],
            name=op.f("fk_api_keys_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "api_key_id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("prefix", name=op.f("uq_api_keys_prefix")),
    )
    op.create_table(
        "archives",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("agent_session_id", sa.UUID(), nullable=False),
        sa.Column("archive_seq", sa.Integer(), nullable=False),
        sa.Column("start_seq", sa.BigInteger(), nullable=False),
        sa.Column("end_seq", sa.BigInteger(), nullable=False),
        sa.Column("overview", sa.Text(), nullable=True),
        sa.Column("abstract", sa.Text(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("start_seq <= end_seq", name=op.f("ck_archives_range")),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            name=op.f("fk_archives_tenant_id_agent_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id", "agent_session_id", "archive_seq", name=op.f("pk_archives")
        ),
    )
    op.create_table(
        "messages",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("agent_session_id", sa.UUID(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("message", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("content_text", sa.Text(), nullable=False),
        sa.Column("metadata", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "role IN ('system', 'user', 'assistant', 'tool')", name=op.f("ck_messages_role")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            name=op.f("fk_messages_tenant_id_agent_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "agent_session_id", "seq", name=op.f("pk_messages")),
    )
    for table in TENANT_TABLES:
        enable_tenant_isolation(table)


def enable_tenant_isolation(table: str) -> None:
    """RLS compares tenant_id with the transaction's app.tenant_id; the owner is not subject."""
    op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON {table} "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {APP_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_table("messages")
    op.drop_table("archives")
    op.drop_table("api_keys")
    op.drop_index("ix_agent_sessions_tenant_id_user_id", table_name="agent_sessions")
    op.drop_index("ix_agent_sessions_tenant_id_created_at", table_name="agent_sessions")
    op.drop_table("agent_sessions")
    op.drop_table("tenants")
    # The role and the extension may serve other databases of the cluster: they stay.
    op.execute(f"REVOKE USAGE ON SCHEMA public FROM {APP_ROLE}")
