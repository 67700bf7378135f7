"""Erasing a user: a content-free tombstone per erasure, and each tenant's receipt-signing key.

``user_erasures`` holds one row per erasure of a user of a tenant: the SHA-256 of the tenant
and the user id (never the id itself), which API key asked (its id), when it started and
finished, how many rows it removed from each table, and, once finished, the signed receipt. An
unfinished row is the erasure's progress: a crash leaves it, and erasing the user again goes on
from it. The service's login may read, insert and update it, never delete it; an auditor reads
it through ``wm_user_erasures``.

``idempotency_keys`` gains the agent session an idempotent write was about (every such write
names one in its path), so erasing the agent session's user removes its stored answers.

``receipt_keys`` holds each tenant's Ed25519 key pair that signs its receipts (made on first
use); the public half is served at ``GET /v1/receipts/public-key``.

Revision ID: 20261202_0030_user_erasures
Revises: 20261202_0020_wm_restore
Create Date: 2026-12-02 00:30:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "20261202_0030_user_erasures"
down_revision: str | None = "20261202_0020_wm_restore"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
AUDITOR_ROLE = "workmem_auditor"
CURRENT_TENANT = "(SELECT workmem_verified_tenant())"
AUDITOR_TENANT = (
    "(SELECT l.tenant_id FROM auditor_logins l WHERE l.login_role = session_user::text)"
)

ERASURES_VIEW = """
CREATE VIEW wm_user_erasures WITH (security_invoker = true) AS
SELECT e.tenant_id, e.erasure_id, e.user_id_sha256, e.requested_by, e.started_at,
       e.finished_at, e.removed,
       (SELECT coalesce(sum(value::bigint), 0) FROM jsonb_each_text(e.removed)) AS rows_removed
FROM user_erasures e
"""


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "user_erasures",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column(
            "erasure_id", sa.UUID(), server_default=sa.text("gen_random_uuid()"), nullable=False
        ),
        sa.Column("user_id_sha256", sa.String(length=64), nullable=False),
        sa.Column("requested_by", sa.UUID(), nullable=True),
        sa.Column(
            "started_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("removed", JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column("receipt", JSONB(), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.tenant_id"],
            name=op.f("fk_user_erasures_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "erasure_id", name=op.f("pk_user_erasures")),
    )
    # One unfinished erasure per user: a second request goes on with it.
    op.create_index(
        "uq_user_erasures_unfinished",
        "user_erasures",
        ["tenant_id", "user_id_sha256"],
        unique=True,
        postgresql_where=sa.text("finished_at IS NULL"),
    )
    op.create_index(
        "ix_user_erasures_tenant_id_user_id_sha256",
        "user_erasures",
        ["tenant_id", "user_id_sha256", "started_at"],
    )
    # Which agent session an idempotent write was about: its stored answer goes with it.
    op.add_column("idempotency_keys", sa.Column("agent_session_id", sa.UUID(), nullable=True))
    op.create_index(
        "ix_idempotency_keys_tenant_id_agent_session_id",
        "idempotency_keys",
        ["tenant_id", "agent_session_id"],
        postgresql_where=sa.text("agent_session_id IS NOT NULL"),
    )
    op.create_table(
        "receipt_keys",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("public_key", sa.LargeBinary(), nullable=False),
        sa.Column("private_key", sa.LargeBinary(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.tenant_id"],
            name=op.f("fk_receipt_keys_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_receipt_keys")),
    )
    for table in ("user_erasures", "receipt_keys"):
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
        )
    op.execute(f"GRANT SELECT, INSERT, UPDATE ON user_erasures TO {APP_ROLE}")
    op.execute(f"GRANT SELECT, INSERT ON receipt_keys TO {APP_ROLE}")
    op.execute(ERASURES_VIEW)
    op.execute(f"GRANT SELECT ON wm_user_erasures TO {APP_ROLE}, {AUDITOR_ROLE}")
    # Auditors read the tombstones of their own tenant (never the signing keys).
    op.execute(f"GRANT SELECT ON user_erasures TO {AUDITOR_ROLE}")
    op.execute(
        f"CREATE POLICY auditor_read ON user_erasures FOR SELECT TO {AUDITOR_ROLE} "
        f"USING (tenant_id = {AUDITOR_TENANT})"
    )
    op.execute(
        "CREATE POLICY auditor_only_own_tenant ON user_erasures AS RESTRICTIVE FOR SELECT "
        f"TO {AUDITOR_ROLE} USING (tenant_id = {AUDITOR_TENANT})"
    )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute("DROP VIEW wm_user_erasures")
    op.drop_table("receipt_keys")
    op.drop_table("user_erasures")
    op.drop_index("ix_idempotency_keys_tenant_id_agent_session_id", "idempotency_keys")
    op.drop_column("idempotency_keys", "agent_session_id")
