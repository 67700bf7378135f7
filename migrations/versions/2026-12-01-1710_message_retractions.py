"""Message retractions: a live message withdrawn by its agent, recorded, never deleted.

``message_retractions`` holds one row per withdrawn message (an Agents SDK session's
``pop_item``). Messages stay append-only: the row only tells the context and the next working
memory to leave that message out. Deleting the message (with its agent session) deletes it.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 17:10:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
CURRENT_TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::uuid"


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "message_retractions",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("agent_session_id", sa.UUID(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column(
            "retracted_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id", "seq"],
            ["messages.tenant_id", "messages.agent_session_id", "messages.seq"],
            name=op.f("fk_message_retractions_tenant_id_messages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id", "agent_session_id", "seq", name=op.f("pk_message_retractions")
        ),
    )
    op.execute("ALTER TABLE message_retractions ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE message_retractions FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON message_retractions "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON message_retractions TO {APP_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_table("message_retractions")
