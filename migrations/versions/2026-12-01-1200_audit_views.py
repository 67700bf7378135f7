"""Audit: views over the section history, a text-presence function, and the auditor role.

Adds the views that keep the queries of ``docs/audit.md`` short (``wm_section_timeline``,
``wm_restored_items``, ``wm_archive_daily``; all ``security_invoker``, so row-level security
applies to whoever reads them), the function ``wm_text_presence`` (when a text entered and left
each section), and a read-only ``workmem_auditor`` role. Auditor logins are mapped to one tenant
in ``auditor_logins``; restrictive policies pin every auditor to that tenant, whatever it sets
``app.tenant_id`` to.

Revision ID: 0005
Revises: 0003
Create Date: 2026-12-01 12:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
AUDITOR_ROLE = "workmem_auditor"
CURRENT_TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::uuid"
# The tenant of the logged-in auditor: session_user, not current_user, so SET ROLE changes nothing.
AUDITOR_TENANT = (
    "(SELECT l.tenant_id FROM auditor_logins l WHERE l.login_role = session_user::text)"
)
AUDITED_TABLES = ("archives", "wm_section_versions")
# What the views read of an archive: its range, status, generator and token figures; never the
# overview text, errors or anything of the messages.
ARCHIVE_COLUMNS = (
    "tenant_id",
    "agent_session_id",
    "archive_seq",
    "start_seq",
    "end_seq",
    "status",
    "generator",
    "archived_tokens",
    "wm_tokens",
    "usage",
    "created_at",
    "finished_at",
)
VIEWS = ("wm_section_timeline", "wm_restored_items", "wm_archive_daily")

SECTION_TIMELINE_VIEW = """
CREATE VIEW wm_section_timeline WITH (security_invoker = true) AS
SELECT v.tenant_id, v.agent_session_id, v.archive_seq, v.section, v.position,
       a.start_seq, a.end_seq, a.finished_at,
       v.op_requested, v.op_applied, v.guard, v.reason,
       v.item_count, v.token_count,
       v.item_count - lag(v.item_count) OVER w AS item_delta,
       v.content_sha256 IS DISTINCT FROM lag(v.content_sha256) OVER w AS changed,
       v.content, v.details, v.generator, v.model, v.created_at
FROM wm_section_versions v
JOIN archives a
  ON a.tenant_id = v.tenant_id
 AND a.agent_session_id = v.agent_session_id
 AND a.archive_seq = v.archive_seq
WINDOW w AS (PARTITION BY v.tenant_id, v.agent_session_id, v.section ORDER BY v.archive_seq)
"""

RESTORED_ITEMS_VIEW = """
CREATE VIEW wm_restored_items WITH (security_invoker = true) AS
SELECT v.tenant_id, v.agent_session_id, v.archive_seq, v.section, v.reason,
       restored.item, v.created_at
FROM wm_section_versions v
CROSS JOIN LATERAL jsonb_array_elements_text(
    CASE WHEN jsonb_typeof(v.details -> 'restored') = 'array'
         THEN v.details -> 'restored' ELSE '[]'::jsonb END
) AS restored(item)
WHERE v.reason IN ('open_issues_restored', 'constraint_restored')
"""

# Days are UTC days of finished_at, whatever the server's or the reader's time zone.
ARCHIVE_DAILY_VIEW = """
CREATE VIEW wm_archive_daily WITH (security_invoker = true) AS
WITH finished AS (
    SELECT tenant_id, (finished_at AT TIME ZONE 'UTC')::date AS day, status, generator,
           archived_tokens, wm_tokens, usage
    FROM archives
    WHERE status IN ('done', 'failed') AND finished_at IS NOT NULL
)
SELECT f.tenant_id, f.day,
       count(*) FILTER (WHERE f.status = 'done') AS archives_done,
       count(*) FILTER (WHERE f.status = 'failed') AS archives_failed,
       coalesce(sum(f.archived_tokens) FILTER (WHERE f.status = 'done'), 0) AS message_tokens_in,
       coalesce(sum(f.wm_tokens) FILTER (WHERE f.status = 'done'), 0) AS wm_tokens_out,
       coalesce(sum((f.usage ->> 'prompt_tokens')::bigint), 0) AS model_prompt_tokens,
       coalesce(sum((f.usage ->> 'completion_tokens')::bigint), 0) AS model_completion_tokens,
       (SELECT jsonb_object_agg(mix.generator, mix.archives ORDER BY mix.generator)
        FROM (SELECT g.generator, count(*) AS archives
              FROM finished g
              WHERE g.tenant_id = f.tenant_id AND g.day = f.day AND g.generator IS NOT NULL
              GROUP BY g.generator) mix) AS generator_mix
FROM finished f
GROUP BY f.tenant_id, f.day
"""

# SECURITY INVOKER (the default, said out loud): it reads under the caller's row-level security.
TEXT_PRESENCE_FUNCTION = """
CREATE FUNCTION wm_text_presence(agent_session uuid, needle text)
RETURNS TABLE (
    section wm_section,
    "position" smallint,
    entered_archive_seq integer,
    entered_at timestamptz,
    left_archive_seq integer,
    left_at timestamptz
)
LANGUAGE sql STABLE SECURITY INVOKER
AS $$
    WITH presence AS (
        SELECT v.section, v.position, v.archive_seq, v.created_at,
               strpos(lower(v.content), lower(needle)) > 0 AS present
        FROM wm_section_versions v
        WHERE v.agent_session_id = agent_session
    ), changes AS (
        SELECT p.*,
               lag(p.present, 1, false) OVER (PARTITION BY p.section ORDER BY p.archive_seq)
                   AS was_present
        FROM presence p
    )
    SELECT entered.section, entered.position, entered.archive_seq, entered.created_at,
           gone.archive_seq, gone.created_at
    FROM changes entered
    LEFT JOIN LATERAL (
        SELECT c.archive_seq, c.created_at
        FROM changes c
        WHERE c.section = entered.section AND c.archive_seq > entered.archive_seq
          AND NOT c.present
        ORDER BY c.archive_seq
        LIMIT 1
    ) gone ON true
    WHERE needle <> '' AND entered.present AND NOT entered.was_present
    ORDER BY entered.position, entered.archive_seq
$$
"""


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    # Roles are cluster-wide: another database of the same cluster may have created it already.
    op.execute(
        f"""
        DO $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{AUDITOR_ROLE}') THEN
                CREATE ROLE {AUDITOR_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB
                    NOCREATEROLE;
            END IF;
        END
        $$
        """
    )
    op.create_table(
        "auditor_logins",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("login_role", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.tenant_id"],
            name=op.f("fk_auditor_logins_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "login_role", name=op.f("pk_auditor_logins")),
        sa.UniqueConstraint("login_role", name=op.f("uq_auditor_logins_login_role")),
    )
    op.execute("ALTER TABLE auditor_logins ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE auditor_logins FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON auditor_logins "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    # Each login reads its own mapping (the policies below look it up as the auditor).
    op.execute(
        "CREATE POLICY own_login ON auditor_logins FOR SELECT "
        "USING (login_role = session_user::text)"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON auditor_logins TO {APP_ROLE}")

    op.execute(SECTION_TIMELINE_VIEW)
    op.execute(RESTORED_ITEMS_VIEW)
    op.execute(ARCHIVE_DAILY_VIEW)
    op.execute(TEXT_PRESENCE_FUNCTION)
    op.execute("REVOKE ALL ON FUNCTION wm_text_presence(uuid, text) FROM PUBLIC")
    op.execute(
        f"GRANT EXECUTE ON FUNCTION wm_text_presence(uuid, text) TO {APP_ROLE}, {AUDITOR_ROLE}"
    )
    op.execute(f"GRANT SELECT ON {', '.join(VIEWS)} TO {APP_ROLE}")

    # The auditor: the views, the section history, and the archive columns the views read.
    op.execute(f"GRANT USAGE ON SCHEMA public TO {AUDITOR_ROLE}")
    op.execute(
        f"GRANT SELECT ON wm_section_versions, wm_current_sections, wm_guard_events, "
        f"{', '.join(VIEWS)}, auditor_logins TO {AUDITOR_ROLE}"
    )
    op.execute(f"GRANT SELECT ({', '.join(ARCHIVE_COLUMNS)}) ON archives TO {AUDITOR_ROLE}")
    for table in AUDITED_TABLES:
        # Permissive: an auditor needs no app.tenant_id. Restrictive: setting it widens nothing.
        op.execute(
            f"CREATE POLICY auditor_read ON {table} FOR SELECT TO {AUDITOR_ROLE} "
            f"USING (tenant_id = {AUDITOR_TENANT})"
        )
        op.execute(
            f"CREATE POLICY auditor_only_own_tenant ON {table} AS RESTRICTIVE FOR SELECT "
            f"TO {AUDITOR_ROLE} USING (tenant_id = {AUDITOR_TENANT})"
        )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    for table in AUDITED_TABLES:
        op.execute(f"DROP POLICY auditor_only_own_tenant ON {table}")
        op.execute(f"DROP POLICY auditor_read ON {table}")
    op.execute(f"REVOKE SELECT ({', '.join(ARCHIVE_COLUMNS)}) ON archives FROM {AUDITOR_ROLE}")
    op.execute(
        f"REVOKE SELECT ON wm_section_versions, wm_current_sections, wm_guard_events "
        f"FROM {AUDITOR_ROLE}"
    )
    op.execute("DROP FUNCTION wm_text_presence(uuid, text)")
    for view in reversed(VIEWS):
        op.execute(f"DROP VIEW {view}")
    op.drop_table("auditor_logins")
    # The role may serve other databases of the cluster, like workmem_app: it stays.
    op.execute(f"REVOKE USAGE ON SCHEMA public FROM {AUDITOR_ROLE}")
