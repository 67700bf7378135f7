"""Agent sessions can be forked: a lineage that reads follow instead of copied messages.

``agent_sessions`` gains ``parent_session_id``, ``forked_at_archive_seq`` and ``forked_at_seq``
(the fork point, shown by the API). ``agent_session_lineage`` holds, per fork, the segments of
its history that live in other agent sessions: messages up to ``upto_seq`` and archives up to
``upto_archive_seq`` of ``ancestor_session_id`` (after the previous segment's). Both references
to a parent or an ancestor refuse its deletion while the fork exists. ``wm_session_lineage`` is
the audit view of it.

Revision ID: 20261202_0052_session_forks
Revises: 20261202_0042_memory_policies
Create Date: 2026-12-02 00:52:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261202_0052_session_forks"
down_revision: str | None = "20261202_0042_memory_policies"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
AUDITOR_ROLE = "workmem_auditor"
CURRENT_TENANT = "(SELECT workmem_verified_tenant())"
AUDITOR_TENANT = (
    "(SELECT l.tenant_id FROM auditor_logins l WHERE l.login_role = session_user::text)"
)

LINEAGE_VIEW = """
CREATE VIEW wm_session_lineage WITH (security_invoker = true) AS
SELECT l.tenant_id, l.agent_session_id, l.ancestor_session_id,
       coalesce(lag(l.upto_seq) OVER w, 0) + 1 AS from_seq, l.upto_seq,
       coalesce(lag(l.upto_archive_seq) OVER w, 0) + 1 AS from_archive_seq,
       l.upto_archive_seq, l.created_at
FROM agent_session_lineage l
WINDOW w AS (PARTITION BY l.tenant_id, l.agent_session_id ORDER BY l.upto_seq)
"""


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.add_column("agent_sessions", sa.Column("parent_session_id", postgresql.UUID(as_uuid=True)))
    op.add_column("agent_sessions", sa.Column("forked_at_archive_seq", sa.Integer()))
    op.add_column("agent_sessions", sa.Column("forked_at_seq", sa.BigInteger()))
    op.create_foreign_key(
        op.f("fk_agent_sessions_parent"),
        "agent_sessions",
        "agent_sessions",
        ["tenant_id", "parent_session_id"],
        ["tenant_id", "agent_session_id"],
    )
    op.create_index(
        "ix_agent_sessions_tenant_id_parent_session_id",
        "agent_sessions",
        ["tenant_id", "parent_session_id"],
        postgresql_where=sa.text("parent_session_id IS NOT NULL"),
    )
    op.create_table(
        "agent_session_lineage",
        sa.Column("tenant_id", postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column("agent_session_id", postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column("ancestor_session_id", postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column("upto_seq", sa.BigInteger(), nullable=False),
        sa.Column("upto_archive_seq", sa.Integer(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("upto_seq >= 0", name=op.f("ck_agent_session_lineage_upto_seq")),
        sa.CheckConstraint(
            "upto_archive_seq >= 0", name=op.f("ck_agent_session_lineage_upto_archive_seq")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            name=op.f("fk_agent_session_lineage_session"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "ancestor_session_id"],
            ["agent_sessions.tenant_id", "agent_sessions.agent_session_id"],
            name=op.f("fk_agent_session_lineage_ancestor"),
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id",
            "agent_session_id",
            "ancestor_session_id",
            name=op.f("pk_agent_session_lineage"),
        ),
    )
    op.create_index(
        "ix_agent_session_lineage_tenant_id_ancestor_session_id",
        "agent_session_lineage",
        ["tenant_id", "ancestor_session_id"],
    )
    op.execute("ALTER TABLE agent_session_lineage ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE agent_session_lineage FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON agent_session_lineage "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON agent_session_lineage TO {APP_ROLE}")
    op.execute(LINEAGE_VIEW)
    op.execute(f"GRANT SELECT ON wm_session_lineage TO {APP_ROLE}")
    # Auditors read which history a fork shares, beside the section history, for their tenant.
    op.execute(f"GRANT SELECT ON agent_session_lineage, wm_session_lineage TO {AUDITOR_ROLE}")
    op.execute(
        f"CREATE POLICY auditor_read ON agent_session_lineage FOR SELECT TO {AUDITOR_ROLE} "
        f"USING (tenant_id = {AUDITOR_TENANT})"
    )
    op.execute(
        "CREATE POLICY auditor_only_own_tenant ON agent_session_lineage AS RESTRICTIVE "
        f"FOR SELECT TO {AUDITOR_ROLE} USING (tenant_id = {AUDITOR_TENANT})"
    )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute("DROP VIEW wm_session_lineage")
    op.drop_index(
        "ix_agent_session_lineage_tenant_id_ancestor_session_id",
        table_name="agent_session_lineage",
    )
    op.drop_table("agent_session_lineage")
    op.drop_index(
        "ix_agent_sessions_tenant_id_parent_session_id",
        table_name="agent_sessions",
        postgresql_where=sa.text("parent_session_id IS NOT NULL"),
    )
    op.drop_constraint(
        op.f("fk_agent_sessions_parent"),
        "agent_sessions",
        type_="foreignkey",
    )
    op.drop_column("agent_sessions", "forked_at_seq")
    op.drop_column("agent_sessions", "forked_at_archive_seq")
    op.drop_column("agent_sessions", "parent_session_id")
