"""The webhook delivery claim is fair across tenants: every tenant's oldest due delivery comes
before any tenant's second, and so on (turns, then due time).

The claim took due deliveries oldest first across all tenants, so one tenant with many due
deliveries to a hanging endpoint filled every batch, and another tenant's delivery waited behind
all of them. Now a batch holds each tenant's next delivery first: a tenant's backlog delays
another's delivery by one batch at most.

Only the query of ``workmem_claim_webhook_deliveries`` changes; the function is rewritten in place
from its current definition, so its owner, grants, pinned path and any guard stay as they are.

Revision ID: 20261201_2146_fair_webhook_claim
Revises: 20261201_2145_tenant_tokens
Create Date: 2026-12-01 21:46:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261201_2146_fair_webhook_claim"
down_revision: str | None = "20261201_2145_tenant_tokens"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CLAIM = "workmem_claim_webhook_deliveries(double precision, integer)"

OLDEST_FIRST = """    WITH due AS (
        SELECT d.tenant_id, d.delivery_id
          FROM webhook_deliveries d
         WHERE d.status IN ('pending', 'sending') AND d.next_attempt_at <= now()
         ORDER BY d.next_attempt_at
         LIMIT p_limit
           FOR UPDATE SKIP LOCKED
    )"""

# Each due delivery's turn within its tenant (1 = the tenant's oldest); a batch takes turns in
# order. The rows are locked (and skipped when another loop holds them) as they are picked.
TENANT_TURNS = """    WITH turns AS (
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
    )"""


def swap(old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in the claim's definition; refuse if ``old`` is not there."""
    op.execute(
        f"""
        DO $do$
        DECLARE
            v_definition text := pg_get_functiondef('{CLAIM}'::regprocedure);
            v_changed text;
        BEGIN
            v_changed := replace(v_definition, $old${old}$old$, $new${new}$new$);
            IF v_changed = v_definition THEN
                RAISE EXCEPTION 'the webhook claim does not have the query this revision replaces';
            END IF;
            EXECUTE v_changed;
        END
        $do$
        """
    )


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    swap(OLDEST_FIRST, TENANT_TURNS)


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    swap(TENANT_TURNS, OLDEST_FIRST)
