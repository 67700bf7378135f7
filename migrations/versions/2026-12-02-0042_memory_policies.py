"""Memory policies: which memory an agent session's archives may produce.

``agent_sessions.memory_policy`` holds the agent session's own policy (NULL: none set);
``user_memory_policies`` holds a tenant admin's default for each user, with the key that last set
it. Each is a JSON object of the fields set (``working_memory``, ``long_term_extraction``,
``memory_types``); the archive job resolves the agent session's fields over its user's, field by
field, and everything is on where neither says otherwise.

Revision ID: 20261202_0042_memory_policies
Revises: 20261202_0034_retention
Create Date: 2026-12-02 00:42:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261202_0042_memory_policies"
down_revision: str | None = "20261202_0034_retention"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
CURRENT_TENANT = "(SELECT workmem_verified_tenant())"


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.add_column(
        "agent_sessions",
        sa.Column("memory_policy", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    )
    op.create_table(
        "user_memory_policies",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("policy", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("updated_by", sa.UUID(), nullable=False),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.tenant_id"],
            name=op.f("fk_user_memory_policies_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "user_id", name=op.f("pk_user_memory_policies")),
    )
    op.execute("ALTER TABLE user_memory_policies ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE user_memory_policies FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON user_memory_policies "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON user_memory_policies TO {APP_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_table("user_memory_policies")
    op.drop_column("agent_sessions", "memory_policy")
