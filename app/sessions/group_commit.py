"""Group commit of appends, per process: concurrent appends share one transaction.

While one flush runs, the appends that arrive wait for the next; a flush takes at most
``max_batch`` of them, takes their tenants' quota locks and agent-session locks in id order
(so flushes of several processes never deadlock), runs one append statement each in a single
pipelined transaction and answers every request only after that transaction committed. Appends
of one agent session keep their order of arrival. A failure of the shared transaction is
retried append by append, so one append's failure never fails another's (a quota refused
fails its own append only). Holds no rule of its own: each statement is the ordinary append
(``service.append_prepared``).

An append sent with an ``Idempotency-Key`` joins the group too: the group's transaction first
claims the keys (in key order, before any agent session is locked, so two groups never wait on
each other in a cycle), appends only for the keys it took, and stores each first answer before
it commits; a key already answered is answered from what was stored.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from app.db import Database
from app.errors import AppError, NotFound
from app.idempotency import service as idempotency
from app.idempotency.keys import RequestKey
from app.idempotency.service import Answer
from app.sessions.repository import quota_refusal
from app.sessions.service import (
    AppendOutcome,
    PreparedAppend,
    append_prepared,
    finish_prepared,
    start_prepared,
)
from app.tenancy.principal import Scope

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Keyed:
    """An append's idempotency key, and how its answer is rendered (inside the transaction,
    so the answer stored with the key is the one sent)."""

    request: RequestKey
    render: Callable[[AppendOutcome], bytes]
    status_code: int = 201


Settled = AppendOutcome | Answer
"""What an append ends with: its outcome, or (with a key) its stored answer."""


@dataclass(slots=True)
class _Waiting:
    scope: Scope
    agent_session_id: uuid.UUID
    prepared: PreparedAppend
    answer: asyncio.Future[Settled] = field(repr=False)
    keyed: Keyed | None = None


class GroupCommit:
    def __init__(self, database: Database, *, max_batch: int = 64) -> None:
        self.database = database
        self.max_batch = max_batch
        self._waiting: list[_Waiting] = []
        self._flusher: asyncio.Task[None] | None = None
        self.flushes = 0
        self.appends = 0

    async def append(
        self,
        scope: Scope,
        agent_session_id: uuid.UUID,
        prepared: PreparedAppend,
        keyed: Keyed | None = None,
    ) -> Settled:
        answer: asyncio.Future[Settled] = asyncio.get_running_loop().create_future()
        self._waiting.append(_Waiting(scope, agent_session_id, prepared, answer, keyed))
        if self._flusher is None or self._flusher.done():
            # A context of its own: the flush serves many requests, its log lines none of them.
            self._flusher = asyncio.create_task(self._flush_all(), context=contextvars.Context())
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
        # Lock order: tenant (its quota lock comes first), agent-session id, then arrival
        # (sorted() is stable).
        ordered = sorted(
            batch, key=lambda item: (item.scope.tenant_id.bytes, item.agent_session_id.bytes)
        )
        self.flushes += 1
        self.appends += len(batch)
        for tenant_id in {item.scope.tenant_id for item in ordered}:
            await self.database.ensure_token(tenant_id)
        async with self.database.connection() as connection:
            if any(item.keyed is not None for item in ordered):
                await _settle_keyed(connection, ordered)
                return
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
            except NotFound as error:  # a missing agent session fails its own request only
                outcomes.append(error)
    return outcomes


async def _alone(connection: psycopg.AsyncConnection[Any], item: _Waiting) -> AppendOutcome:
    return await append_prepared(connection, item.scope, item.agent_session_id, item.prepared)


async def append_keyed(
    database: Database,
    scope: Scope,
    agent_session_id: uuid.UUID,
    prepared: PreparedAppend,
    keyed: Keyed,
) -> Answer:
    """One append with an idempotency key, in a transaction of its own (group commit off)."""
    item = _Waiting(
        scope, agent_session_id, prepared, asyncio.get_running_loop().create_future(), keyed
    )
    await database.ensure_token(scope.tenant_id)
    async with database.connection() as connection:
        try:
            [result] = await _keyed_transaction(connection, [item])
        except psycopg.Error as error:
            raise quota_refusal(error) from error
    if isinstance(result, AppError):
        raise result
    if not isinstance(result, Answer):  # an append with a key always ends with an answer
        raise TypeError(f"an append with an idempotency key ended with {type(result).__name__}")
    return result


async def _settle_keyed(connection: psycopg.AsyncConnection[Any], ordered: list[_Waiting]) -> None:
    """A group with idempotency keys: one transaction, else (when it fails) one per append."""
    try:
        results = await _keyed_transaction(connection, ordered)
    except (AppError, psycopg.Error) as error:
        if isinstance(error, psycopg.OperationalError):
            raise
        logger.info("a grouped append failed; retrying one by one", extra={"n": len(ordered)})
        for item in ordered:
            try:
                [result] = await _keyed_transaction(connection, [item])
            except (AppError, psycopg.Error) as own_error:
                if isinstance(own_error, psycopg.OperationalError):
                    raise
                _settle(item, error=own_error)
                continue
            _settle_result(item, result)
        return
    for item, result in zip(ordered, results, strict=True):
        _settle_result(item, result)


async def _keyed_transaction(
    connection: psycopg.AsyncConnection[Any], ordered: list[_Waiting]
) -> list[Settled | AppError]:
    """Claim the keys, append what is not answered yet, store the first answers; one
    transaction, three pipelined round trips."""
    results: dict[int, Settled | AppError] = {}
    keyed = sorted(
        ((index, item, item.keyed) for index, item in enumerate(ordered) if item.keyed),
        key=lambda entry: entry[2].request.key,
    )
    taken: list[tuple[int, _Waiting, Keyed]] = []
    async with connection.transaction():
        async with connection.pipeline():
            claims = [
                await idempotency.start_claim(connection, item.scope.tenant_id, key.request)
                for _, item, key in keyed
            ]
        for (index, item, key), cursors in zip(keyed, claims, strict=True):
            try:
                took, stored = await idempotency.finish_claim(cursors, key.request)
            except AppError as error:  # the key was first used for another request
                results[index] = error
                continue
            if took:
                taken.append((index, item, key))
            else:
                results[index] = stored if stored is not None else idempotency.in_progress()
        appending = [index for index in range(len(ordered)) if index not in results]
        async with connection.pipeline():
            started = [
                await start_prepared(
                    connection,
                    ordered[index].scope,
                    ordered[index].agent_session_id,
                    ordered[index].prepared,
                )
                for index in appending
            ]
        for index, cursor in zip(appending, started, strict=True):
            item = ordered[index]
            try:
                results[index] = await finish_prepared(cursor, item.agent_session_id, item.prepared)
            except NotFound as error:  # a missing agent session fails its own request only
                results[index] = error
        async with connection.pipeline():
            for index, item, key in taken:
                outcome = results[index]
                if isinstance(outcome, AppendOutcome):
                    body = key.render(outcome)
                    await idempotency.send_answer(
                        connection,
                        item.scope.tenant_id,
                        key.request,
                        status_code=key.status_code,
                        body=body,
                    )
                    results[index] = Answer(key.status_code, body, replayed=False)
                else:
                    # The write failed: the key is not spent, a retry does the work then.
                    await idempotency.send_release(connection, item.scope.tenant_id, key.request)
    return [results[index] for index in range(len(ordered))]


def _settle_result(item: _Waiting, result: Settled | AppError) -> None:
    if isinstance(result, AppError):
        _settle(item, error=result)
    else:
        _settle(item, result)


def _settle(
    item: _Waiting, outcome: Settled | None = None, *, error: BaseException | None = None
) -> None:
    if item.answer.done():  # the client went away; its append committed all the same
        return
    if error is not None:
        item.answer.set_exception(quota_refusal(error))
    elif outcome is not None:
        item.answer.set_result(outcome)
