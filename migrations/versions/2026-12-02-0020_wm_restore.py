"""A working memory can be restored: an archive that covers no new message.

A restore makes an earlier version of an agent session's working memory current again by
appending a ``done`` archive whose seven section rows copy that version (``op_applied =
RESTORE``, generator ``restore``). It archives no message, so its range is empty: the range
check becomes ``start_seq <= end_seq + 1``. ``wm_guard_events`` leaves restores out (no guard
acted) and the new view ``wm_restores`` lists them with who restored which version.

Revision ID: 20261202_0020_wm_restore
Revises: 20261202_0016_context_ledger
Create Date: 2026-12-02 00:20:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261202_0020_wm_restore"
down_revision: str | None = "20261202_0016_context_ledger"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
AUDITOR_ROLE = "workmem_auditor"

GUARD_EVENTS = """
CREATE OR REPLACE VIEW wm_guard_events WITH (security_invoker = true) AS
SELECT {columns}
FROM wm_section_versions
WHERE op_applied NOT IN ({excluded})
  AND (op_requested IS DISTINCT FROM op_applied OR reason NOT IN ('accepted', 'nothing_new'))
"""

RESTORES_VIEW = """
CREATE VIEW wm_restores WITH (security_invoker = true) AS
SELECT v.tenant_id, v.agent_session_id, v.archive_seq, v.section, v.position,
       (v.details ->> 'restored_from_archive')::integer AS restored_from_archive,
       (v.details ->> 'replaced_archive')::integer AS replaced_archive,
       (v.details ->> 'restored_by_key')::uuid AS restored_by_key,
       (v.details ->> 'changed')::boolean AS changed,
       v.content_sha256, v.token_count, v.item_count, v.created_at
FROM wm_section_versions v
WHERE v.op_applied = 'RESTORE'
"""


def _guard_events(excluded: str) -> None:
    """Redefine the view's filter with the columns it has (``SELECT *`` was expanded when it
    was created; a later column of the table is not one of the view's)."""
    columns = (
        op.get_bind()
        .execute(
            sa.text(
                "SELECT attname FROM pg_attribute WHERE attrelid = 'wm_guard_events'::regclass"
                " AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
            )
        )
        .scalars()
        .all()
    )
    listed = ", ".join(f'"{column}"' for column in columns)
    op.execute(GUARD_EVENTS.format(columns=listed, excluded=excluded))


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_constraint("range", "archives", type_="check")
    op.create_check_constraint("range", "archives", "start_seq <= end_seq + 1")
    _guard_events("'IMPORT', 'RESTORE'")
    op.execute(RESTORES_VIEW)
    op.execute(f"GRANT SELECT ON wm_restores TO {APP_ROLE}, {AUDITOR_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute("DROP VIEW wm_restores")
    _guard_events("'IMPORT'")
    # The old check wants a message in every range: a restore archive keeps its rows and
    # numbering, and claims the last message of the range before it (a restore needs one).
    op.execute("UPDATE archives SET start_seq = end_seq WHERE start_seq > end_seq")
    op.drop_constraint("range", "archives", type_="check")
    op.create_check_constraint("range", "archives", "start_seq <= end_seq")
