"""Message redactions: who replaced a message's content, when and why.

``message_redactions`` holds one row per redacted message. Redacting replaces the message's
content (and what was derived from it alone) with ``[redacted]``; the row is the record that it
happened, holding no content of its own: the key that redacted it, the time and the reason given.
Deleting the message (with its agent session) deletes it.

Revision ID: 20261201_2205_redactions
Revises: 20261201_2203_trust_views
Create Date: 2026-12-01 22:05:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261201_2205_redactions"
down_revision: str | None = "20261201_2203_trust_views"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
CURRENT_TENANT = "(SELECT workmem_verified_tenant())"


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "message_redactions",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("agent_session_id", sa.UUID(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("redacted_by", sa.UUID(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column(
            "redacted_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id", "seq"],
            ["messages.tenant_id", "messages.agent_session_id", "messages.seq"],
            name=op.f("fk_message_redactions_tenant_id_messages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id", "agent_session_id", "seq", name=op.f("pk_message_redactions")
        ),
    )
    op.execute("ALTER TABLE message_redactions ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE message_redactions FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON message_redactions "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT, DELETE ON message_redactions TO {APP_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_table("message_redactions")
