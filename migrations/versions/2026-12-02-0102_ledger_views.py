"""Audit views over the context ledger: what a recorded context used, joined to the history.

``context_used_sections``: one row per recorded context per section version its summary was made
of, with that version's decision (requested and applied op, guard, reason), generator and model,
and whether the version still holds what was sent (a fork's shared archives are read from the
ancestor that holds them, as its reads are). ``context_used_items``: one row per item of
those section versions with the message seqs it came from and their authority (provenance).
``context_used_messages``: one row per raw message a recorded context sent, ``tail`` or
``filled``, and whether it went as a cleared placeholder. All ``security_invoker`` like the other
audit views, readable by the service and by auditors.

Revision ID: 20261202_0102_ledger_views
Revises: 20261202_0100_archive_actions
Create Date: 2026-12-02 01:02:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261202_0102_ledger_views"
down_revision: str | None = "20261202_0100_archive_actions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
AUDITOR_ROLE = "workmem_auditor"
VIEWS = ("context_used_messages", "context_used_items", "context_used_sections")


def holder(archive_seq: str) -> str:
    """The agent session that holds archive ``archive_seq`` of the context's agent session: an
    ancestor for the archives a fork shares, else the agent session itself."""
    return (
        "coalesce((SELECT l.ancestor_session_id FROM wm_session_lineage l "
        "WHERE l.tenant_id = c.tenant_id AND l.agent_session_id = c.agent_session_id "
        f"AND {archive_seq} BETWEEN l.from_archive_seq AND l.upto_archive_seq LIMIT 1), "
        "c.agent_session_id)"
    )


USED_SECTIONS_VIEW = f"""
CREATE VIEW context_used_sections WITH (security_invoker = true) AS
SELECT c.tenant_id, c.context_id, c.agent_session_id, c.created_at AS recorded_at, c.source,
       (ref ->> 'archive_seq')::integer AS archive_seq, ref ->> 'section' AS section,
       ref ->> 'content_sha256' AS content_sha256,
       v.position, v.content_sha256 IS NOT DISTINCT FROM ref ->> 'content_sha256' AS unchanged,
       v.op_requested, v.op_applied, v.guard, v.reason, v.token_count, v.item_count,
       v.generator, v.model, v.created_at AS version_created_at
FROM context_records c
CROSS JOIN LATERAL jsonb_array_elements(c.summary_sections) AS ref
CROSS JOIN LATERAL (SELECT {holder("(ref ->> 'archive_seq')::integer")} AS holder) AS h
LEFT JOIN wm_section_versions v
       ON v.tenant_id = c.tenant_id AND v.agent_session_id = h.holder
      AND v.archive_seq = (ref ->> 'archive_seq')::integer
      AND v.section::text = ref ->> 'section'
"""

USED_ITEMS_VIEW = f"""
CREATE VIEW context_used_items WITH (security_invoker = true) AS
SELECT c.tenant_id, c.context_id, c.agent_session_id, c.created_at AS recorded_at,
       i.archive_seq, i.section, i.item_position, i.item, i.seqs, i.authority, i.reason
FROM context_records c
CROSS JOIN LATERAL (SELECT {holder("c.summary_archive_seq")} AS holder) AS h
JOIN wm_item_authority i
  ON i.tenant_id = c.tenant_id AND i.agent_session_id = h.holder
 AND i.archive_seq = c.summary_archive_seq
"""

USED_MESSAGES_VIEW = """
CREATE VIEW context_used_messages WITH (security_invoker = true) AS
SELECT c.tenant_id, c.context_id, c.agent_session_id, c.created_at AS recorded_at,
       runs.part, seq, seq = ANY(c.cleared_seqs) AS cleared,
       seq = ANY(c.redacted_seqs) AS redacted_when_sent
FROM context_records c
CROSS JOIN LATERAL (
    SELECT 'filled' AS part, run FROM jsonb_array_elements(c.filled_ranges) AS f(run)
    UNION ALL
    SELECT 'tail' AS part, run FROM jsonb_array_elements(c.tail_ranges) AS t(run)
) AS runs
CROSS JOIN LATERAL generate_series((runs.run ->> 0)::bigint, (runs.run ->> 1)::bigint) AS seq
"""


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(USED_SECTIONS_VIEW)
    op.execute(USED_ITEMS_VIEW)
    op.execute(USED_MESSAGES_VIEW)
    for view in VIEWS:
        op.execute(f"GRANT SELECT ON {view} TO {APP_ROLE}, {AUDITOR_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    for view in VIEWS:
        op.execute(f"DROP VIEW {view}")
