"""Running Alembic from the application: locating the scripts, upgrade, downgrade, current."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory


def _script_location() -> Path:
    packaged = Path(__file__).parent / "_migrations"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(url: str | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_script_location()))
    config.attributes["skip_logging_config"] = True
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


@lru_cache(maxsize=1)
def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate as the schema owner; then register ``WORKMEM_SERVICE_KEY``, when it is set."""
    command.upgrade(alembic_config(url), revision)
    service_key = os.environ.get("WORKMEM_SERVICE_KEY")
    if service_key:
        register_service_key(url, service_key)


def register_service_key(admin_url: str, service_key: str) -> bool:
    """Store the digest of the key that work across tenants takes (the schema owner's right);
    False when the schema has no keyring yet (below the tenant-token revision)."""
    import psycopg

    from app.db import libpq_url

    with psycopg.connect(libpq_url(admin_url), autocommit=True) as connection:
        found = connection.execute("SELECT to_regclass('public.workmem_keyring')").fetchone()
        if found is None or found[0] is None:
            return False
        connection.execute(
            "UPDATE workmem_keyring"
            " SET service_key_sha256 = encode(sha256(convert_to(%s, 'UTF8')), 'hex')",
            (service_key,),
        )
    return True


def downgrade(url: str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)


def current_revision(url: str) -> str | None:
    """The database's revision; ``None`` before the first migration."""
    from alembic.migration import MigrationContext
    from sqlalchemy import create_engine, pool

    from app.db import normalize_url

    engine = create_engine(normalize_url(url), poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()


def set_login_password(admin_url: str, password: str) -> None:
    """Give the service's login role its password (roles are cluster-wide: so is this)."""
    import psycopg
    from psycopg import sql

    from app.db import APP_ROLE, libpq_url

    with psycopg.connect(libpq_url(admin_url), autocommit=True) as connection:
        connection.execute(
            sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(APP_ROLE), sql.Literal(password)
            )
        )
