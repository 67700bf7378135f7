"""What the models cost: ``model_calls``, one row per model or embedding call.

Each row names the tenant, the agent session and archive seq the call worked for (when it
worked for one), its purpose, the model, the tokens in and out the provider reported, the
latency and the outcome (``ok``, ``error``, ``refused``). It holds no prompt, message or key.
Deleting an agent session keeps its rows for the tenant's bill and sets their agent session to
NULL. Row-level security like every tenant table.

Revision ID: 20261202_0058_model_calls
Revises: 20261202_0052_session_forks
Create Date: 2026-12-02 00:58:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261202_0058_model_calls"
down_revision: str | None = "20261202_0052_session_forks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
CURRENT_TENANT = "(SELECT workmem_verified_tenant())"
PURPOSES = "'wm_create', 'wm_update', 'extraction', 'embedding', 'query_embedding', 'other'"


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "model_calls",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column(
            "call_id", sa.UUID(), server_default=sa.text("gen_random_uuid()"), nullable=False
        ),
        sa.Column("agent_session_id", sa.UUID(), nullable=True),
        sa.Column("archive_seq", sa.Integer(), nullable=True),
        sa.Column("purpose", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.CheckConstraint(f"purpose IN ({PURPOSES})", name=op.f("ck_model_calls_purpose")),
        sa.CheckConstraint(
            "outcome IN ('ok', 'error', 'refused')", name=op.f("ck_model_calls_outcome")
        ),
        sa.CheckConstraint(
            "input_tokens >= 0 AND output_tokens >= 0 AND latency_ms >= 0",
            name=op.f("ck_model_calls_amounts"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            name=op.f("fk_model_calls_tenant_id_agent_sessions"),
            ondelete="SET NULL (agent_session_id)",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.tenant_id"],
            name=op.f("fk_model_calls_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "call_id", name=op.f("pk_model_calls")),
    )
    op.create_index(
        "ix_model_calls_tenant_id_created_at", "model_calls", ["tenant_id", "created_at"]
    )
    op.execute("ALTER TABLE model_calls ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE model_calls FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON model_calls "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT, DELETE ON model_calls TO {APP_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_table("model_calls")
