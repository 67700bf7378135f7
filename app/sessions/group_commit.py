"""Group commit of appends, per process: concurrent appends share one transaction.

While one flush runs, the appends that arrive wait for the next; a flush takes at most
``max_batch`` of them, locks their agent sessions in id order (so flushes of several processes
never deadlock), runs one append statement each in a single pipelined transaction and answers
every request only after that transaction committed. Appends of one agent session keep their
order of arrival. A failure of the shared transaction is retried append by append, so one
append's failure never fails another's. Holds no rule of its own: each statement is the
ordinary append (``service.append_prepared``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

import psycopg

from app.db import Database
from app.errors import AppError
from app.sessions.service import (
    AppendOutcome,
    PreparedAppend,
    append_prepared,
    finish_prepared,
    start_prepared,
)
from app.tenancy.principal import Scope

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Waiting:
    scope: Scope
    agent_session_id: uuid.UUID
    prepared: PreparedAppend
    answer: asyncio.Future[AppendOutcome] = field(repr=False)


class GroupCommit:
    def __init__(self, database: Database, *, max_batch: int = 64) -> None:
        self.database = database
        self.max_batch = max_batch
        self._waiting: list[_Waiting] = []
        self._flusher: asyncio.Task[None] | None = None
        self.flushes = 0
        self.appends = 0

    async def append(
        self, scope: Scope, agent_session_id: uuid.UUID, prepared: PreparedAppend
    ) -> AppendOutcome:
        answer: asyncio.Future[AppendOutcome] = asyncio.get_running_loop().create_future()
        self._waiting.append(_Waiting(scope, agent_session_id, prepared, answer))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_all())
        return await answer

    async def close(self) -> None:
        """Let the appends already waiting be committed (and answered) before shutdown."""
        if self._flusher is not None:
            await asyncio.gather(self._flusher, return_exceptions=True)

    async def _flush_all(self) -> None:
        while self._waiting:
            batch = self._waiting[: self.max_batch]
            del self._waiting[: self.max_batch]
            try:
                await self._flush(batch)
            except BaseException as error:  # answer every waiting request, whatever happened
                for item in batch:
                    _settle(item, error=error)
                if not isinstance(error, Exception):
                    raise

    async def _flush(self, batch: list[_Waiting]) -> None:
        # Lock order: agent-session id, then arrival (sorted() is stable).
        ordered = sorted(batch, key=lambda item: item.agent_session_id.bytes)
        self.flushes += 1
        self.appends += len(batch)
        async with self.database.connection() as connection:
            if len(ordered) == 1:
                # Alone: the statement is its own transaction, no BEGIN or COMMIT around it.
                [item] = ordered
                try:
                    _settle(item, await _alone(connection, item))
                except (AppError, psycopg.Error) as error:
                    if isinstance(error, psycopg.OperationalError):
                        raise
                    _settle(item, error=error)
                return
            try:
                outcomes = await _in_one_transaction(connection, ordered)
            except (AppError, psycopg.Error) as error:
                if isinstance(error, psycopg.OperationalError):
                    raise
                logger.info("a grouped append failed; retrying one by one", extra={"n": len(batch)})
                for item in ordered:
                    try:
                        _settle(item, await _alone(connection, item))
                    except (AppError, psycopg.Error) as own_error:
                        _settle(item, error=own_error)
                return
        for item, outcome in zip(ordered, outcomes, strict=True):
            if isinstance(outcome, AppError):
                _settle(item, error=outcome)
            else:
                _settle(item, outcome)


async def _in_one_transaction(
    connection: psycopg.AsyncConnection[Any], batch: list[_Waiting]
) -> list[AppendOutcome | AppError]:
    outcomes: list[AppendOutcome | AppError] = []
    async with connection.transaction():
        # Every statement is sent before any result is read: one round trip for the group.
        async with connection.pipeline():
            cursors = [
                await start_prepared(connection, item.scope, item.agent_session_id, item.prepared)
                for item in batch
            ]
        for item, cursor in zip(batch, cursors, strict=True):
            try:
                outcomes.append(await finish_prepared(cursor, item.agent_session_id, item.prepared))
            except AppError as error:  # a missing agent session fails its own request only
                outcomes.append(error)
    return outcomes


async def _alone(connection: psycopg.AsyncConnection[Any], item: _Waiting) -> AppendOutcome:
    return await append_prepared(connection, item.scope, item.agent_session_id, item.prepared)


def _settle(
    item: _Waiting, outcome: AppendOutcome | None = None, *, error: BaseException | None = None
) -> None:
    if item.answer.done():  # the client went away; its append committed all the same
        return
    if error is not None:
        item.answer.set_exception(error)
    elif outcome is not None:
        item.answer.set_result(outcome)
