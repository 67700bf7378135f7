"""Counting the SQL statements a request sends, whichever way it sends them.

The counter sits under SQLAlchemy, as the psycopg cursor class of every connection of one
engine: statements executed through the ORM, through Core and directly on the driver connection
(the append path) all pass through a cursor's ``execute``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from sqlalchemy import event

from app.db import Database


@dataclass
class StatementLog:
    """The statements sent while ``recording()`` is open, in order."""

    statements: list[str] = field(default_factory=list)
    active: bool = False

    @contextmanager
    def recording(self) -> Iterator[list[str]]:
        self.statements = []
        self.active = True
        try:
            yield self.statements
        finally:
            self.active = False

    def note(self, query: object) -> None:
        if self.active:
            self.statements.append(" ".join(str(query).split()))


def count_statements(database: Database) -> StatementLog:
    """Install a counting cursor on every connection ``database`` opens from now on."""
    log = StatementLog()

    class CountingCursor(psycopg.AsyncCursor[Any]):
        async def execute(self, query: Any, params: Any = None, **options: Any) -> Any:
            log.note(query)
            return await super().execute(query, params, **options)

        async def executemany(self, query: Any, params_seq: Any, **options: Any) -> None:
            log.note(query)
            await super().executemany(query, params_seq, **options)

    @event.listens_for(database.engine.sync_engine, "connect")
    def _install(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.driver_connection.cursor_factory = CountingCursor

    return log
