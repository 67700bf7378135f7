"""Recording the SQL statements a process sends, whichever way it sends them.

The log installs its cursor class on every new connection of a ``Database`` (the SQLAlchemy
engine's, the autocommit pool's and dedicated ones, through ``Database.from_url(on_connect=…)``):
statements executed through the ORM, through Core and directly on the driver all pass through a
cursor's ``execute``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg


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
