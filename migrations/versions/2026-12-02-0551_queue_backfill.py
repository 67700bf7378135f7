"""Fill both claim queues again from every tenant's unfinished work, and drop the index the old
webhook claim read.

``20261202_0150_shard_safe`` and ``20261202_0535_webhook_queue`` filled ``claimable_archives``
and ``claimable_webhook_deliveries`` with an ``INSERT … SELECT`` run as the migrating role. Row-
level security is forced on the tables they read, so each SELECT saw what that role's policies
show it: every row for a superuser, and for a schema owner that inherits ``workmem_definer``
(whose permissive policy sees every tenant), unless a restrictive policy narrows it. An owner
that also inherits ``workmem_auditor`` (granted to it with the admin option to manage auditor
logins, or created by it with ``createrole_self_grant`` set to inherit) reads ``archives``
through ``auditor_only_own_tenant`` and sees no archive at all: the archives pending at that
upgrade got no queue row, and no claim ever takes them.

So both queues are filled again here, reading as ``workmem_definer`` (``SET LOCAL ROLE``), the
role the claims themselves run as: its policy sees every tenant's rows, no restrictive policy
names it, it may read both sources and write both queues, and every role that can run this
chain may take it (revision ``0003`` hands functions to it, which takes the same right). Rows
already queued keep their time (``ON CONFLICT DO NOTHING``); a queue row whose work is not due
yet is harmless, the claim sets it to the work's time. Nothing changes for other sessions, and
the locks are those of the statements themselves (``ACCESS SHARE`` on the sources, ``ROW
EXCLUSIVE`` on the queues); turning row-level security off for the owner (``NO FORCE``, then
``FORCE`` again) would hold ``ACCESS EXCLUSIVE`` on ``archives`` until commit, stopping every
reader of the table for as long as the migration runs.

``20261202_0104_redacted_vectors`` cleared the vector of every redacted memory with an
``UPDATE`` that updates nothing unless a superuser runs it: the owner's policies on ``memories``
let it write no tenant's rows (``workmem_definer``'s policy there is for reading only), so a
redacted memory kept its vector. That ``UPDATE`` runs again here with row-level security not
forced on ``memories`` for the statement (``NO FORCE``, the statement, ``FORCE`` again in the
same transaction: DDL is transactional, so no other session ever sees it lifted). That takes
``ACCESS EXCLUSIVE`` on ``memories`` until this revision commits; it is the last step, so memory
reads and writes wait for one scan of ``memories`` only.

``ix_webhook_deliveries_due`` (due deliveries across tenants) served the claim that read
``webhook_deliveries`` itself; the claim now reads its queue, and every other statement on the
table names a tenant and a delivery or a subscription. Dropping it takes ``ACCESS EXCLUSIVE`` on
``webhook_deliveries`` until the revision commits (``DROP INDEX CONCURRENTLY`` cannot run inside
the revision's transaction), that is for the scan of ``memories`` that follows.

Downgrade: the index comes back; the queue rows and cleared vectors stay (they are what the
earlier revisions meant to write, and undoing them would lose work or bring back what a
redaction removed).

Revision ID: 20261202_0551_queue_backfill
Revises: 20261202_0535_webhook_queue
Create Date: 2026-12-02 05:51:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261202_0551_queue_backfill"
down_revision: str | None = "20261202_0535_webhook_queue"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEFINER_ROLE = "workmem_definer"
DUE_INDEX = "ix_webhook_deliveries_due"
UNFINISHED = "status IN ('pending', 'sending')"


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(f"SET LOCAL ROLE {DEFINER_ROLE}")
    op.execute(
        "INSERT INTO claimable_archives (tenant_id, agent_session_id, available_at)"
        " SELECT tenant_id, agent_session_id, min(available_at) FROM archives"
        " WHERE status IN ('pending', 'running') GROUP BY tenant_id, agent_session_id"
        " ON CONFLICT (tenant_id, agent_session_id) DO NOTHING"
    )
    op.execute(
        "INSERT INTO claimable_webhook_deliveries (tenant_id, delivery_id, available_at)"
        " SELECT tenant_id, delivery_id, next_attempt_at FROM webhook_deliveries"
        f" WHERE {UNFINISHED}"
        " ON CONFLICT (tenant_id, delivery_id) DO NOTHING"
    )
    op.execute("RESET ROLE")
    op.drop_index(DUE_INDEX, table_name="webhook_deliveries", postgresql_where=sa.text(UNFINISHED))
    op.execute("ALTER TABLE memories NO FORCE ROW LEVEL SECURITY")
    op.execute(
        "UPDATE memories SET embedding = NULL, embedding_model = '[redacted]'"
        " WHERE content = '[redacted]'"
        " AND (embedding IS NOT NULL OR embedding_model IS DISTINCT FROM '[redacted]')"
    )
    op.execute("ALTER TABLE memories FORCE ROW LEVEL SECURITY")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_index(
        DUE_INDEX,
        "webhook_deliveries",
        ["next_attempt_at"],
        unique=False,
        postgresql_where=sa.text(UNFINISHED),
    )
