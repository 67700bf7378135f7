"""Retention and expiry: a tenant's policy, purged raw messages, memories that expire.

- ``retention_policies``: one row per tenant that has set one (none: nothing is purged). Each
  limit is a number of days, NULL when off: ``archive_messages_days`` (raw messages of archives
  older than that are deleted; the archive and the working memory stay), ``idle_session_days``
  (agent sessions with no append or commit for that long are deleted) and ``memory_days`` (per
  category: a new memory of that category expires that many days after it is written).
- ``archives.messages_purged_at`` and ``messages_purged_count``: when the archive's raw
  messages were purged and how many there were; NULL while they are kept.
- ``memories.expires_at``: NULL for a memory that never expires.

Revision ID: 20261202_0034_retention
Revises: 20261202_0030_user_erasures
Create Date: 2026-12-02 00:34:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261202_0034_retention"
down_revision: str | None = "20261202_0030_user_erasures"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
CURRENT_TENANT = "(SELECT workmem_verified_tenant())"
DAYS = "BETWEEN 1 AND 36500"


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "retention_policies",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("archive_messages_days", sa.Integer(), nullable=True),
        sa.Column("idle_session_days", sa.Integer(), nullable=True),
        sa.Column(
            "memory_days",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("updated_by", sa.UUID(), nullable=True),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.CheckConstraint(
            f"archive_messages_days {DAYS}",
            name=op.f("ck_retention_policies_archive_messages_days"),
        ),
        sa.CheckConstraint(
            f"idle_session_days {DAYS}", name=op.f("ck_retention_policies_idle_session_days")
        ),
        sa.CheckConstraint(
            "jsonb_typeof(memory_days) = 'object'", name=op.f("ck_retention_policies_memory_days")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.tenant_id"],
            name=op.f("fk_retention_policies_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_retention_policies")),
    )
    op.execute("ALTER TABLE retention_policies ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE retention_policies FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON retention_policies "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON retention_policies TO {APP_ROLE}")

    op.add_column(
        "archives", sa.Column("messages_purged_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.add_column("archives", sa.Column("messages_purged_count", sa.Integer(), nullable=True))
    # The purge looks for a tenant's oldest archives whose messages are still kept.
    op.create_index(
        "ix_archives_tenant_id_created_at_unpurged",
        "archives",
        ["tenant_id", "created_at"],
        postgresql_where=sa.text("messages_purged_at IS NULL"),
    )
    op.add_column("memories", sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index(
        "ix_memories_tenant_id_expires_at",
        "memories",
        ["tenant_id", "expires_at"],
        postgresql_where=sa.text("expires_at IS NOT NULL"),
    )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_index("ix_memories_tenant_id_expires_at", table_name="memories")
    op.drop_column("memories", "expires_at")
    op.drop_index("ix_archives_tenant_id_created_at_unpurged", table_name="archives")
    op.drop_column("archives", "messages_purged_count")
    op.drop_column("archives", "messages_purged_at")
    op.drop_table("retention_policies")
