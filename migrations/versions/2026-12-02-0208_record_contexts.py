"""An agent session may record every context by default: ``agent_sessions.record_contexts``.

When it is true, a context request that does not say ``record`` is recorded in the context
ledger; ``record=false`` on the request still leaves it out. Existing agent sessions get false,
so nothing is recorded that was not before.

Revision ID: 20261202_0208_record_contexts
Revises: 20261202_0150_shard_safe
Create Date: 2026-12-02 02:08:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261202_0208_record_contexts"
down_revision: str | None = "20261202_0150_shard_safe"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    # A constant default: Postgres adds the column without rewriting the table.
    op.add_column(
        "agent_sessions",
        sa.Column("record_contexts", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_column("agent_sessions", "record_contexts")
