"""Archive actions: who retried or cleared a failed archive, when and why.

``archive_actions`` holds one row per operator action on an archive (``retry`` or ``clear``):
the API key that asked (``actor = 'api_key'``), or none when the operator did from the command
line (``actor = 'operator'``), and the reason given. Deleting the agent session deletes them.
``workmem_requeue_failed`` (``workmem archives retry``) now writes a row for each archive it
queues again, in the same statement. Auditors read the table for their tenant.

Revision ID: 20261202_0100_archive_actions
Revises: 20261202_0058_model_calls
Create Date: 2026-12-02 01:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261202_0100_archive_actions"
down_revision: str | None = "20261202_0058_model_calls"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
DEFINER_ROLE = "workmem_definer"
AUDITOR_ROLE = "workmem_auditor"
CURRENT_TENANT = "(SELECT workmem_verified_tenant())"
AUDITOR_TENANT = (
    "(SELECT l.tenant_id FROM auditor_logins l WHERE l.login_role = session_user::text)"
)
PINNED = "SET search_path = pg_catalog, public, pg_temp"
GUARD = (
    "BEGIN IF NOT workmem_is_service() THEN RAISE EXCEPTION "
    "'this function acts across tenants: it needs the service key' USING ERRCODE = '42501'; "
    "END IF;"
)
REQUEUE = "workmem_requeue_failed(p_tenant_id uuid, p_agent_session_id uuid, p_archive_seq integer)"
RETURNS = "TABLE (tenant_id uuid, agent_session_id uuid, archive_seq integer)"
REQUEUE_SET = (
    "SET status = 'pending', attempt = 0, available_at = now(), lease_until = NULL,"
    " last_error = NULL, error_stage = NULL, finished_at = NULL"
)
REQUEUE_WHERE = """
     WHERE a.status = 'failed'
       AND (p_tenant_id IS NULL OR a.tenant_id = p_tenant_id)
       AND (p_agent_session_id IS NULL OR a.agent_session_id = p_agent_session_id)
       AND (p_archive_seq IS NULL OR a.archive_seq = p_archive_seq)"""

RECORDED_BODY = f"""
#variable_conflict use_column
{GUARD}
    RETURN QUERY
        WITH requeued AS (
            UPDATE archives AS a {REQUEUE_SET} {REQUEUE_WHERE}
            RETURNING a.tenant_id, a.agent_session_id, a.archive_seq
        ), recorded AS (
            INSERT INTO archive_actions (tenant_id, agent_session_id, archive_seq, action, actor)
            SELECT r.tenant_id, r.agent_session_id, r.archive_seq, 'retry', 'operator'
              FROM requeued r
        )
        SELECT r.tenant_id, r.agent_session_id, r.archive_seq FROM requeued r;
END
"""

PREVIOUS_BODY = f"""
#variable_conflict use_column
{GUARD}
    RETURN QUERY
        UPDATE archives AS a {REQUEUE_SET} {REQUEUE_WHERE}
        RETURNING a.tenant_id, a.agent_session_id, a.archive_seq;
END
"""


def _requeue(body: str) -> str:
    return (
        f"CREATE OR REPLACE FUNCTION {REQUEUE} RETURNS {RETURNS} LANGUAGE plpgsql "
        f"SECURITY DEFINER {PINNED} AS $fn${body}$fn$"
    )


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "archive_actions",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("action_id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("agent_session_id", sa.UUID(), nullable=False),
        sa.Column("archive_seq", sa.Integer(), nullable=False),
        sa.Column("action", sa.Text(), nullable=False),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column("api_key_id", sa.UUID(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.CheckConstraint("action IN ('retry', 'clear')", name=op.f("ck_archive_actions_action")),
        sa.CheckConstraint(
            "(actor = 'api_key') = (api_key_id IS NOT NULL) AND actor IN ('api_key', 'operator')",
            name=op.f("ck_archive_actions_actor"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id", "archive_seq"],
            ["archives.tenant_id", "archives.agent_session_id", "archives.archive_seq"],
            name=op.f("fk_archive_actions_tenant_id_archives"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "action_id", name=op.f("pk_archive_actions")),
    )
    op.create_index(
        "ix_archive_actions_tenant_id_agent_session_id",
        "archive_actions",
        ["tenant_id", "agent_session_id", "archive_seq"],
    )
    op.execute("ALTER TABLE archive_actions ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE archive_actions FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON archive_actions "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT ON archive_actions TO {APP_ROLE}")
    # The operator's re-queue (a definer function, every tenant) records its own rows.
    op.execute(
        f"CREATE POLICY cross_tenant_definer ON archive_actions TO {DEFINER_ROLE} "
        "USING (true) WITH CHECK (true)"
    )
    op.execute(f"GRANT SELECT, INSERT ON archive_actions TO {DEFINER_ROLE}")
    op.execute(f"GRANT SELECT ON archive_actions TO {AUDITOR_ROLE}")
    op.execute(
        f"CREATE POLICY auditor_read ON archive_actions FOR SELECT TO {AUDITOR_ROLE} "
        f"USING (tenant_id = {AUDITOR_TENANT})"
    )
    op.execute(
        "CREATE POLICY auditor_only_own_tenant ON archive_actions AS RESTRICTIVE FOR SELECT "
        f"TO {AUDITOR_ROLE} USING (tenant_id = {AUDITOR_TENANT})"
    )
    op.execute(_requeue(RECORDED_BODY))


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(_requeue(PREVIOUS_BODY))
    op.execute(f"REVOKE SELECT ON archive_actions FROM {AUDITOR_ROLE}")
    op.drop_index("ix_archive_actions_tenant_id_agent_session_id", table_name="archive_actions")
    op.drop_table("archive_actions")
