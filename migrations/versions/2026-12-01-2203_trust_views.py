"""Audit: lines the source guard restored, and who every item's sources are.

``wm_restored_items`` also lists the lines restored from the source (``details.source_restored``,
whatever the section's final reason: a Task & Goals decision that marked a planted constraint
keeps the restoration beside it). ``wm_item_authority`` is one row per item of every section
version with its message seqs and its authority (user, system, pin, assistant, tool), read from
``wm_section_versions.sources``; ``security_invoker`` like the other audit views, readable by the
service and by auditors.

Revision ID: 20261201_2203_trust_views
Revises: 20261201_2200_bounded_history
Create Date: 2026-12-01 22:03:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261201_2203_trust_views"
down_revision: str | None = "20261201_2200_bounded_history"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
AUDITOR_ROLE = "workmem_auditor"


def _array(expression: str) -> str:
    return f"CASE WHEN jsonb_typeof({expression}) = 'array' THEN {expression} ELSE '[]'::jsonb END"


RESTORED_ITEMS_VIEW = f"""
CREATE OR REPLACE VIEW wm_restored_items WITH (security_invoker = true) AS
SELECT v.tenant_id, v.agent_session_id, v.archive_seq, v.section, v.reason,
       restored.item, v.created_at
FROM wm_section_versions v
CROSS JOIN LATERAL (
    SELECT guard.item
    FROM jsonb_array_elements_text(
        CASE WHEN v.reason IN ('open_issues_restored', 'constraint_restored')
             THEN {_array("v.details -> 'restored'")} ELSE '[]'::jsonb END
    ) AS guard(item)
    UNION ALL
    SELECT source.item
    FROM jsonb_array_elements_text({_array("v.details -> 'source_restored'")}) AS source(item)
) AS restored(item)
"""

OLD_RESTORED_ITEMS_VIEW = """
CREATE OR REPLACE VIEW wm_restored_items WITH (security_invoker = true) AS
SELECT v.tenant_id, v.agent_session_id, v.archive_seq, v.section, v.reason,
       restored.item, v.created_at
FROM wm_section_versions v
CROSS JOIN LATERAL jsonb_array_elements_text(
    CASE WHEN jsonb_typeof(v.details -> 'restored') = 'array'
         THEN v.details -> 'restored' ELSE '[]'::jsonb END
) AS restored(item)
WHERE v.reason IN ('open_issues_restored', 'constraint_restored')
"""

ITEM_AUTHORITY_VIEW = f"""
CREATE VIEW wm_item_authority WITH (security_invoker = true) AS
SELECT v.tenant_id, v.agent_session_id, v.archive_seq, v.section,
       s.ordinality::integer AS item_position,
       s.entry ->> 'item' AS item,
       ARRAY(SELECT jsonb_array_elements_text({_array("s.entry -> 'seqs'")})::bigint) AS seqs,
       ARRAY(SELECT jsonb_array_elements_text({_array("s.entry -> 'authority'")})) AS authority,
       v.reason, v.created_at
FROM wm_section_versions v
CROSS JOIN LATERAL jsonb_array_elements({_array("v.sources")})
    WITH ORDINALITY AS s(entry, ordinality)
"""


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(RESTORED_ITEMS_VIEW)
    op.execute(ITEM_AUTHORITY_VIEW)
    op.execute(f"GRANT SELECT ON wm_item_authority TO {APP_ROLE}, {AUDITOR_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute("DROP VIEW wm_item_authority")
    op.execute(OLD_RESTORED_ITEMS_VIEW)
