"""Definer functions search ``pg_temp`` last; an auditor reads its own login name only.

Every ``SECURITY DEFINER`` function (and the append, which pins its path too) had
``search_path = pg_catalog, public``: with ``pg_temp`` left out, Postgres searches the caller's
temporary schema *first* for tables, so a caller's temporary table named like a real one
shadowed it inside the function. Naming ``pg_temp`` last puts it after the real tables.

``auditor_logins`` had only the service's tenant policy and each login's own row: an auditor that
set ``app.tenant_id`` to another tenant read that tenant's auditor login names. A restrictive
policy limits every auditor to its own row, whatever it sets.

Revision ID: 20261201_2125_definer_path
Revises: 0010
Create Date: 2026-12-01 21:25:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261201_2125_definer_path"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

AUDITOR_ROLE = "workmem_auditor"


def set_paths(path: str) -> None:
    """Give every function of the schema that pins a search_path the path ``path``."""
    op.execute(
        f"""
        DO $$
        DECLARE f regprocedure;
        BEGIN
            FOR f IN
                SELECT p.oid::regprocedure FROM pg_proc p
                 WHERE p.pronamespace = 'public'::regnamespace
                   AND EXISTS (SELECT 1 FROM unnest(p.proconfig) c
                                WHERE c LIKE 'search\\_path=%')
            LOOP
                EXECUTE format('ALTER FUNCTION %s SET search_path = {path}', f);
            END LOOP;
        END
        $$
        """
    )


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    set_paths("pg_catalog, public, pg_temp")
    op.execute(
        "CREATE POLICY auditor_own_login_only ON auditor_logins AS RESTRICTIVE FOR SELECT "
        f"TO {AUDITOR_ROLE} USING (login_role = session_user::text)"
    )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute("DROP POLICY auditor_own_login_only ON auditor_logins")
    set_paths("pg_catalog, public")
