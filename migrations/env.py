"""Alembic environment: runs revisions on a synchronous psycopg connection.

The URL is, in order: the ``sqlalchemy.url`` set by the caller (the CLI, the tests), then
``DATABASE_URL``, then the embedded Postgres under ``$WORKMEM_HOME``.
"""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy import create_engine, pool

import app.models  # noqa: F401 - registers every table on Base.metadata
from app.config import Settings
from app.db import Base, normalize_url

config = context.config
if config.config_file_name is not None and not config.attributes.get("skip_logging_config"):
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def database_url() -> str:
    configured = config.get_main_option("sqlalchemy.url")
    if configured:
        return normalize_url(configured)
    settings = Settings()
    if settings.database_url:
        return normalize_url(settings.database_url)
    from app.embedded import start_embedded

    return start_embedded(settings.embedded_data_dir).url()


# Tables the service never maps: the keyring is read by the definer functions alone.
UNMAPPED = frozenset({"workmem_keyring"})


def include_object(
    _object: object, name: str | None, type_: str, reflected: bool, _compare_to: object
) -> bool:
    return not (type_ == "table" and reflected and name in UNMAPPED)


def run_migrations() -> None:
    engine = create_engine(database_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            compare_type=True,
            include_object=include_object,
            transaction_per_migration=True,
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline SQL generation is not supported; run against a database")
run_migrations()
