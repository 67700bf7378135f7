"""A Postgres server for the test run: ``WORKMEM_TEST_DATABASE_URL``'s, or an embedded one.

Creates throwaway databases on it, each migrated by the real Alembic revisions.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

from app.db import normalize_url


@dataclass(frozen=True)
class DatabaseUrls:
    """A migrated database: ``admin`` owns it (migrations, operator commands), ``app`` is the
    service's own login."""

    admin: str
    app: str


@dataclass
class PostgresForTests:
    """The server; ``url(name)`` points at one of its databases."""

    base_url: str
    _server: Any = None
    _tmp: tempfile.TemporaryDirectory[str] | None = None
    created: list[str] = field(default_factory=list)

    @classmethod
    def start(cls) -> PostgresForTests:
        configured = os.environ.get("WORKMEM_TEST_DATABASE_URL")
        if configured:
            return cls(base_url=normalize_url(configured))
        from pgserver.postgres_server import get_server

        from tests.support.clusters import register

        tmp = tempfile.TemporaryDirectory(prefix="wmpg")
        server = get_server(register(Path(tmp.name) / "pg"), cleanup_mode="delete")
        return cls(base_url=normalize_url(server.get_uri("postgres")), _server=server, _tmp=tmp)

    def url(self, database: str) -> str:
        return make_url(self.base_url).set(database=database).render_as_string(hide_password=False)

    def _admin(self) -> psycopg.Connection[Any]:
        url = make_url(self.url("postgres")).set(drivername="postgresql")
        return psycopg.connect(url.render_as_string(hide_password=False), autocommit=True)

    def create_database(self, prefix: str = "wm") -> str:
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        with self._admin() as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        self.created.append(name)
        return self.url(name)

    @property
    def data_dir(self) -> Path | None:
        """The embedded cluster's data directory (None for a configured server)."""
        return None if self._tmp is None else Path(self._tmp.name) / "pg"

    def create_app_database(self, prefix: str = "wm") -> DatabaseUrls:
        """A new database migrated to head, with the URLs of its owner and of the app."""
        from app import migrations
        from app.db import login_url

        url = self.create_database(prefix)
        migrations.upgrade(url)
        return DatabaseUrls(admin=url, app=login_url(url))

    def stop(self) -> None:
        if self._server is not None:
            with self._admin() as connection:
                for name in self.created:
                    connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            self._server.cleanup()
        if self._tmp is not None:
            self._tmp.cleanup()
