"""An operator may clear a failed archive: a status of its own, ``cleared``.

A cleared archive is finished for good: the worker claims only ``pending`` archives, so it never
runs again, and the next archive of its agent session covers its messages as it covers a failed
one's. Downgrading turns cleared archives back into failed ones.

Revision ID: 20261201_2327_cleared_archives
Revises: 20261201_2246_stored_words
Create Date: 2026-12-01 23:27:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "20261201_2327_cleared_archives"
down_revision: str | None = "20261201_2246_stored_words"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_constraint("status", "archives", type_="check")
    op.create_check_constraint(
        "status", "archives", "status IN ('pending', 'running', 'done', 'failed', 'cleared')"
    )


def downgrade() -> None:
    op.execute("UPDATE archives SET status = 'failed' WHERE status = 'cleared'")
    op.drop_constraint("status", "archives", type_="check")
    op.create_check_constraint(
        "status", "archives", "status IN ('pending', 'running', 'done', 'failed')"
    )
