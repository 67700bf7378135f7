"""A Postgres server for the test process: an embedded cluster, ``WORKMEM_TEST_DATABASE_URL``'s
server, or a container (``tests/support/backends.py`` chooses).

Creates throwaway databases on it, each migrated by the real Alembic revisions. Under xdist every
worker starts its own embedded cluster or container; on a configured server the workers share
the server and each creates databases of its own.
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
from tests.support.backends import (
    Backend,
    Choice,
    choose_backend,
    docker_unavailable,
    start_container,
)

MIGRATION_LOCK = 7_402_611
"""An advisory lock taken while a database is migrated: the roles a migration creates are
cluster-wide, so processes sharing a server migrate one at a time."""


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
    _container: Any = None
    created: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, choice: Choice | None = None) -> PostgresForTests:
        """The server of ``choice`` (by default, the one the environment asks for)."""
        if choice is None:
            choice = choose_backend(os.environ, docker_unavailable)
        if choice.unavailable is not None:
            raise RuntimeError(choice.unavailable)
        if choice.backend is Backend.CONFIGURED:
            assert choice.url is not None
            return cls(base_url=normalize_url(choice.url))
        if choice.backend is Backend.CONTAINER:
            assert choice.image is not None
            container, url = start_container(choice.image)
            return cls(base_url=normalize_url(url), _container=container)
        from app.embedded import postgres_server
        from tests.support.clusters import register

        tmp = tempfile.TemporaryDirectory(prefix="wmpg")
        server = postgres_server(register(Path(tmp.name) / "pg"), cleanup_mode="delete")
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
        with self._admin() as connection:
            connection.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
            migrations.upgrade(url)
        return DatabaseUrls(admin=url, app=login_url(url))

    def stop(self) -> None:
        if self._container is None:  # a container goes whole
            with self._admin() as connection:
                for name in self.created:
                    connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if self._server is not None:
            self._server.cleanup()
        if self._tmp is not None:
            self._tmp.cleanup()
        if self._container is not None:
            self._container.stop()
