"""Prepared generations: an idle agent session's working memory, generated ahead of its commit.

``prepared_generations`` holds at most one row per agent session: the state the offline
generator reached over the closed batches of a message range (``first_seq`` … ``end_seq``),
starting from the working memory of the done archive ``prior_archive_seq`` (0: none), for a
token ``budget`` and under a ``fingerprint`` of what the state depends on. The commit's job
resumes from it instead of starting over. ``state`` is the generator's own, opaque here.

A cache derived from the agent session's messages: deleting the agent session deletes it, an
erasure deletes it with the agent session, a bundle does not carry it. Row-level security like
every tenant table; no privileged function reads it, and auditors do not (like the claim's
queue, it is not part of the audit trail, and it may quote messages, which auditors never read).

Revision ID: 20261202_0750_prepared
Revises: 20261202_0551_queue_backfill
Create Date: 2026-12-02 07:50:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261202_0750_prepared"
down_revision: str | None = "20261202_0551_queue_backfill"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
CURRENT_TENANT = "(SELECT workmem_verified_tenant())"


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "prepared_generations",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("agent_session_id", sa.UUID(), nullable=False),
        sa.Column("prior_archive_seq", sa.Integer(), nullable=False),
        sa.Column("first_seq", sa.BigInteger(), nullable=False),
        sa.Column("end_seq", sa.BigInteger(), nullable=False),
        sa.Column("budget", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.Text(), nullable=False),
        sa.Column("state", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            name=op.f("fk_prepared_generations_tenant_id_agent_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id", "agent_session_id", name=op.f("pk_prepared_generations")
        ),
    )
    op.execute("ALTER TABLE prepared_generations ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE prepared_generations FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON prepared_generations "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON prepared_generations TO {APP_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_table("prepared_generations")
