"""Webhooks: per-tenant subscriptions, a transactional outbox of deliveries, their attempts.

``webhook_subscriptions`` holds each endpoint's URL, the event types it wants and its signing
secret. ``webhook_deliveries`` is the outbox: a row per event and subscribed endpoint, written in
the transaction of the state change it reports, and the delivery job itself (``pending →
sending → delivered | failed``; ``next_attempt_at`` is its due time and, while ``sending``, its
lease). ``webhook_attempts`` records every attempt. The delivery loop claims due rows of every
tenant through ``workmem_claim_webhook_deliveries`` (``SECURITY DEFINER``, owned by
``workmem_definer``), which returns ids only; everything after runs under the row's tenant.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 17:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
DEFINER_ROLE = "workmem_definer"
CURRENT_TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::uuid"
TABLES = ("webhook_subscriptions", "webhook_deliveries", "webhook_attempts")
CLAIM = "workmem_claim_webhook_deliveries(double precision, integer)"

CLAIM_FUNCTION = """
CREATE FUNCTION workmem_claim_webhook_deliveries(p_lease_s double precision, p_limit integer)
RETURNS TABLE (tenant_id uuid, delivery_id uuid, attempt integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $fn$
#variable_conflict use_column
BEGIN
    -- A claimed row is 'sending' with next_attempt_at moved to the end of its lease: if the
    -- process delivering it dies, the row is due again once the lease has passed.
    RETURN QUERY
    WITH due AS (
        SELECT d.tenant_id, d.delivery_id
          FROM webhook_deliveries d
         WHERE d.status IN ('pending', 'sending') AND d.next_attempt_at <= now()
         ORDER BY d.next_attempt_at
         LIMIT p_limit
           FOR UPDATE SKIP LOCKED
    )
    UPDATE webhook_deliveries AS d
       SET status = 'sending',
           attempt = d.attempt + 1,
           next_attempt_at = now() + make_interval(secs => p_lease_s)
      FROM due
     WHERE d.tenant_id = due.tenant_id AND d.delivery_id = due.delivery_id
    RETURNING d.tenant_id, d.delivery_id, d.attempt;
END
$fn$
"""


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "webhook_subscriptions",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column(
            "webhook_id", sa.UUID(), server_default=sa.text("gen_random_uuid()"), nullable=False
        ),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("events", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.CheckConstraint("cardinality(events) > 0", name=op.f("ck_webhook_subscriptions_events")),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.tenant_id"],
            name=op.f("fk_webhook_subscriptions_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "webhook_id", name=op.f("pk_webhook_subscriptions")),
    )
    op.create_index(
        "ix_webhook_subscriptions_tenant_id_created_at",
        "webhook_subscriptions",
        ["tenant_id", "created_at", "webhook_id"],
        unique=False,
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column(
            "delivery_id", sa.UUID(), server_default=sa.text("gen_random_uuid()"), nullable=False
        ),
        sa.Column("webhook_id", sa.UUID(), nullable=False),
        sa.Column("event_id", sa.UUID(), nullable=False),
        sa.Column("event_type", sa.String(length=32), nullable=False),
        sa.Column("payload", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column(
            "status", sa.String(length=16), server_default=sa.text("'pending'"), nullable=False
        ),
        sa.Column("attempt", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "next_attempt_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'sending', 'delivered', 'failed')",
            name=op.f("ck_webhook_deliveries_status"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "webhook_id"],
            ["webhook_subscriptions.tenant_id", "webhook_subscriptions.webhook_id"],
            name=op.f("fk_webhook_deliveries_tenant_id_webhook_subscriptions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "delivery_id", name=op.f("pk_webhook_deliveries")),
    )
    op.create_index(
        "ix_webhook_deliveries_tenant_id_webhook_id",
        "webhook_deliveries",
        ["tenant_id", "webhook_id", "created_at", "delivery_id"],
        unique=False,
    )
    op.create_index(
        "ix_webhook_deliveries_due",
        "webhook_deliveries",
        ["next_attempt_at"],
        unique=False,
        postgresql_where=sa.text("status IN ('pending', 'sending')"),
    )
    op.create_table(
        "webhook_attempts",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("delivery_id", sa.UUID(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id", "delivery_id"],
            ["webhook_deliveries.tenant_id", "webhook_deliveries.delivery_id"],
            name=op.f("fk_webhook_attempts_tenant_id_webhook_deliveries"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id", "delivery_id", "attempt", name=op.f("pk_webhook_attempts")
        ),
    )
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
        )
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {APP_ROLE}")
    # Only the claim reaches across tenants: it reads and updates due deliveries, nothing else.
    op.execute(
        f"CREATE POLICY cross_tenant_definer ON webhook_deliveries TO {DEFINER_ROLE} "
        "USING (true) WITH CHECK (true)"
    )
    op.execute(f"GRANT SELECT, UPDATE ON webhook_deliveries TO {DEFINER_ROLE}")
    op.execute(CLAIM_FUNCTION)
    op.execute(f"ALTER FUNCTION {CLAIM} OWNER TO {DEFINER_ROLE}")
    op.execute(f"REVOKE ALL ON FUNCTION {CLAIM} FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION {CLAIM} TO {APP_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(f"DROP FUNCTION {CLAIM}")
    op.execute(f"REVOKE ALL ON webhook_deliveries FROM {DEFINER_ROLE}")
    op.drop_table("webhook_attempts")
    op.drop_index(
        "ix_webhook_deliveries_due",
        table_name="webhook_deliveries",
        postgresql_where=sa.text("status IN ('pending', 'sending')"),
    )
    op.drop_index("ix_webhook_deliveries_tenant_id_webhook_id", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_index(
        "ix_webhook_subscriptions_tenant_id_created_at", table_name="webhook_subscriptions"
    )
    op.drop_table("webhook_subscriptions")
