"""Shard-safe webhook delivery claim: no statement of the claim reads deliveries across tenants.

- ``claimable_webhook_deliveries`` holds one row per unfinished delivery (tenant, delivery, when
  it is next due). The outbox writes it in the statement that enqueues the delivery; settling an
  attempt moves it to the retry's time or deletes it with the delivery's final status.
- ``workmem_claim_webhook_deliveries`` takes due rows of that table in turns (every tenant's
  oldest due row before any tenant's second) with ``FOR UPDATE SKIP LOCKED``, then claims each
  delivery by its tenant and sets the row due again when the lease passes. A row whose delivery
  is finished or gone is deleted by the claim that finds it so; one whose delivery is held by
  another transaction, or not yet due, waits for it. Its signature and result do not change.

A table a tenant-distributed cluster keeps whole on every node, like ``claimable_archives``.

Revision ID: 20261202_0535_webhook_queue
Revises: 20261202_0310_vector_scope
Create Date: 2026-12-02 05:35:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261202_0535_webhook_queue"
down_revision: str | None = "20261202_0310_vector_scope"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
DEFINER_ROLE = "workmem_definer"
TABLE = "claimable_webhook_deliveries"
INDEX = "ix_claimable_webhook_deliveries_available_at"
CURRENT_TENANT = "(SELECT workmem_verified_tenant())"
PINNED = "SET search_path = pg_catalog, public, pg_temp"
GUARD = (
    "IF NOT workmem_is_service() THEN RAISE EXCEPTION "
    "'this function acts across tenants: it needs the service key' USING ERRCODE = '42501'; "
    "END IF;"
)

CLAIM = "workmem_claim_webhook_deliveries(p_lease_s double precision, p_limit integer)"
CLAIM_RETURNS = "TABLE (tenant_id uuid, delivery_id uuid, attempt integer)"
CLAIM_BODY = f"""
#variable_conflict use_column
DECLARE
    v_tenant_id uuid;
    v_delivery_id uuid;
    v_next timestamptz;
BEGIN {GUARD}
    -- Due rows in turns: each tenant's oldest due row, then each tenant's second, and so on.
    FOR v_tenant_id, v_delivery_id IN
        SELECT q.tenant_id, q.delivery_id
          FROM {TABLE} q
          JOIN (SELECT r.tenant_id, r.delivery_id,
                       row_number() OVER (PARTITION BY r.tenant_id
                                          ORDER BY r.available_at, r.delivery_id) AS turn
                  FROM {TABLE} r
                 WHERE r.available_at <= now()) t
            ON t.tenant_id = q.tenant_id AND t.delivery_id = q.delivery_id
         WHERE q.available_at <= now()
         ORDER BY t.turn, q.available_at, q.delivery_id
         LIMIT p_limit
           FOR UPDATE OF q SKIP LOCKED
    LOOP
        -- The delivery, by its tenant, if it is due and no other transaction holds it (one that
        -- settles it waits for this row of the queue: skipping, never waiting, keeps the two
        -- from waiting for each other).
        PERFORM 1
           FROM webhook_deliveries d
          WHERE d.tenant_id = v_tenant_id AND d.delivery_id = v_delivery_id
            AND d.status IN ('pending', 'sending') AND d.next_attempt_at <= now()
            FOR UPDATE SKIP LOCKED;
        IF FOUND THEN
            -- Claimed: 'sending', due again when the lease passes if the process delivering it
            -- dies (the queue row with it).
            RETURN QUERY
                UPDATE webhook_deliveries AS d
                   SET status = 'sending',
                       attempt = d.attempt + 1,
                       next_attempt_at = now() + make_interval(secs => p_lease_s)
                 WHERE d.tenant_id = v_tenant_id AND d.delivery_id = v_delivery_id
                RETURNING d.tenant_id, d.delivery_id, d.attempt;
            UPDATE {TABLE} q
               SET available_at = now() + make_interval(secs => p_lease_s)
             WHERE q.tenant_id = v_tenant_id AND q.delivery_id = v_delivery_id;
            CONTINUE;
        END IF;
        -- Not claimed: when the delivery is next due, or no row at all when it is finished or
        -- gone.
        SELECT d.next_attempt_at INTO v_next
          FROM webhook_deliveries d
         WHERE d.tenant_id = v_tenant_id AND d.delivery_id = v_delivery_id
           AND d.status IN ('pending', 'sending');
        IF NOT FOUND THEN
            DELETE FROM {TABLE} q
             WHERE q.tenant_id = v_tenant_id AND q.delivery_id = v_delivery_id;
        ELSE
            -- Held by another transaction: look again in a second.
            UPDATE {TABLE} q
               SET available_at = greatest(v_next, now() + interval '1 second')
             WHERE q.tenant_id = v_tenant_id AND q.delivery_id = v_delivery_id;
        END IF;
    END LOOP;
END
"""
CLAIM_BODY_BEFORE = f"""
#variable_conflict use_column
BEGIN {GUARD}
    -- A claimed row is 'sending' with next_attempt_at moved to the end of its lease: if the
    -- process delivering it dies, the row is due again once the lease has passed.
    RETURN QUERY
    WITH turns AS (
        SELECT d.tenant_id, d.delivery_id, d.next_attempt_at,
               row_number() OVER (PARTITION BY d.tenant_id
                                  ORDER BY d.next_attempt_at, d.delivery_id) AS turn
          FROM webhook_deliveries d
         WHERE d.status IN ('pending', 'sending') AND d.next_attempt_at <= now()
    ), due AS (
        SELECT d.tenant_id, d.delivery_id
          FROM webhook_deliveries d
          JOIN turns t ON t.tenant_id = d.tenant_id AND t.delivery_id = d.delivery_id
         WHERE d.status IN ('pending', 'sending') AND d.next_attempt_at <= now()
         ORDER BY t.turn, t.next_attempt_at, t.delivery_id
         LIMIT p_limit
           FOR UPDATE OF d SKIP LOCKED
    )
    UPDATE webhook_deliveries AS d
       SET status = 'sending',
           attempt = d.attempt + 1,
           next_attempt_at = now() + make_interval(secs => p_lease_s)
      FROM due
     WHERE d.tenant_id = due.tenant_id AND d.delivery_id = due.delivery_id
    RETURNING d.tenant_id, d.delivery_id, d.attempt;
END
"""


def _claim(body: str) -> None:
    """Rewritten in place: its owner (``workmem_definer``) and grants stay as they are."""
    op.execute(
        f"CREATE OR REPLACE FUNCTION {CLAIM} RETURNS {CLAIM_RETURNS} LANGUAGE plpgsql "
        f"SECURITY DEFINER {PINNED} AS $fn${body}$fn$"
    )


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        TABLE,
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("delivery_id", sa.UUID(), nullable=False),
        sa.Column(
            "available_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("tenant_id", "delivery_id", name=op.f(f"pk_{TABLE}")),
    )
    op.create_index(INDEX, TABLE, ["available_at"])
    # The service writes its own tenant's rows (enqueue, settle); the claim, as the definer,
    # reads and moves every tenant's.
    op.execute(f"ALTER TABLE {TABLE} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {TABLE} FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON {TABLE} "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {TABLE} TO {APP_ROLE}")
    op.execute(
        f"CREATE POLICY cross_tenant_definer ON {TABLE} TO {DEFINER_ROLE} "
        "USING (true) WITH CHECK (true)"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {TABLE} TO {DEFINER_ROLE}")
    op.execute(
        f"INSERT INTO {TABLE} (tenant_id, delivery_id, available_at)"
        " SELECT tenant_id, delivery_id, next_attempt_at FROM webhook_deliveries"
        " WHERE status IN ('pending', 'sending')"
    )
    _claim(CLAIM_BODY)


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    _claim(CLAIM_BODY_BEFORE)
    op.drop_index(INDEX, table_name=TABLE)
    op.drop_table(TABLE)
