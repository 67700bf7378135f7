"""Recording the SQL statements a process sends, whichever way it sends them.

The log installs its cursor class on every new connection of a ``Database`` (the SQLAlchemy
engine's, the autocommit pool's and dedicated ones, through ``Database.from_url(on_connect=…)``):
statements executed through the ORM, through Core and directly on the driver all pass through a
cursor's ``execute``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg
from asgi_lifespan import LifespanManager

from app.config import Settings
from app.db import Database
from app.main import create_app
from app.tenancy.auth import AUTHENTICATOR
from tests.support.postgres import PostgresForTests


@dataclass(frozen=True)
class Statement:
    sql: str
    params: Mapping[str, Any] | Sequence[Any] | None


@dataclass
class StatementLog:
    """The statements sent while ``recording()`` is open, in order."""

    recorded: list[Statement] = field(default_factory=list)
    active: bool = False

    @contextmanager
    def recording(self) -> Iterator[list[str]]:
        """Record; the list yielded holds each statement's SQL on one line."""
        self.recorded = []
        self.active = True
        texts: list[str] = []
        try:
            yield texts
        finally:
            self.active = False
            texts.extend(statement.sql for statement in self.recorded)

    def note(self, query: object, params: Any) -> None:
        if self.active:
            self.recorded.append(Statement(" ".join(str(query).split()), params))

    def install(self, connection: psycopg.AsyncConnection[Any]) -> None:
        log = self

        class RecordingCursor(psycopg.AsyncCursor[Any]):
            async def execute(self, query: Any, params: Any = None, **options: Any) -> Any:
                log.note(query, params)
                return await super().execute(query, params, **options)

            async def executemany(self, query: Any, params_seq: Any, **options: Any) -> None:
                for params in params_seq:
                    log.note(query, params)
                await super().executemany(query, params_seq, **options)

        connection.cursor_factory = RecordingCursor


@asynccontextmanager
async def recorded_app(
    postgres: PostgresForTests, settings: Settings, database_name: str
) -> AsyncIterator[tuple[httpx.AsyncClient, StatementLog, Database]]:
    """The app in process on a new database ``database_name``, every statement it sends passing
    through the log; credentials stay cached for an hour, so no count includes a key look-up."""
    url = postgres.create_app_database(database_name).app
    log = StatementLog()
    database = Database.from_url(url, pool_size=4, on_connect=log.install)
    app = create_app(settings.model_copy(update={"database_url": url}), database=database)
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://workmem.test"
        ) as http,
    ):
        AUTHENTICATOR.get(app).ttl_s = 3600.0
        yield http, log, database
    await database.dispose()
