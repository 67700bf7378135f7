"""What SQL run as the service's own login (``workmem_app``) can reach outside its tenant.

Each case is a statement an attacker with the app's connection (an SQL injection) would try.
"""

from __future__ import annotations

from typing import Any

import psycopg

from app.db import libpq_url


def app_connection(database_url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(libpq_url(database_url), autocommit=True)


def test_a_temporary_table_does_not_shadow_a_table_inside_a_definer_function(
    database_url: str,
) -> None:
    with app_connection(database_url) as connection:
        real = connection.execute("SELECT workmem_schema_revision()").fetchone()
        connection.execute("CREATE TEMP TABLE alembic_version (version_num text)")
        connection.execute("INSERT INTO alembic_version VALUES ('forged')")
        connection.execute("GRANT SELECT ON alembic_version TO PUBLIC")
        shadowed = connection.execute("SELECT workmem_schema_revision()").fetchone()
    assert real is not None
    assert shadowed == real
