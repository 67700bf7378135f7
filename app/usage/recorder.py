"""Writes model-call rows in the background, so a call never waits for, nor fails on, its row.

``record`` only appends to a bounded in-memory queue and wakes the writer; ``run`` writes what
is queued in batches, one transaction per tenant, until stopped, and writes the rest when it
stops. A row that cannot be written (no tenant, the queue full, the database refusing the batch)
is logged and counted in ``workmem_model_usage_rows_dropped_total``, never raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque

from app.db import Database
from app.metrics import USAGE_ROWS_DROPPED
from app.usage.records import ModelCallRecord
from app.usage.repository import insert_calls

logger = logging.getLogger(__name__)


class UsageRecorder:
    def __init__(self, database: Database, *, capacity: int = 10_000, batch: int = 500) -> None:
        self.database = database
        self.capacity = capacity
        self.batch = batch
        self._queue: deque[ModelCallRecord] = deque()
        self._wakeup = asyncio.Event()

    @property
    def queued(self) -> int:
        return len(self._queue)

    def record(self, call: ModelCallRecord) -> None:
        """Queue one row; never blocks, never raises."""
        if len(self._queue) >= self.capacity:
            USAGE_ROWS_DROPPED.labels("queue_full").inc()
            return
        self._queue.append(call)
        self._wakeup.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Write queued rows as they come until ``stop`` is set, then write what is left."""
        while not stop.is_set():
            await _wait_any(stop, self._wakeup)
            self._wakeup.clear()
            while self._queue:
                await self.flush()
        while self._queue:
            await self.flush()

    async def close(self) -> None:
        """Write every row still queued (those of work that finished after ``run`` stopped)."""
        while self._queue:
            await self.flush()

    async def flush(self) -> int:
        """Write up to one batch of queued rows; the number written."""
        taken: dict[uuid.UUID, list[ModelCallRecord]] = {}
        for _ in range(min(self.batch, len(self._queue))):
            call = self._queue.popleft()
            taken.setdefault(call.scope.tenant_id, []).append(call)
        written = 0
        for tenant_id, calls in taken.items():
            try:
                async with self.database.tenant(tenant_id) as db:
                    await insert_calls(db, tenant_id, calls)
            except Exception as error:  # a lost row must never stop the writer
                USAGE_ROWS_DROPPED.labels("write_failed").inc(len(calls))
                logger.warning(
                    "model-call rows not written",
                    extra={"rows": len(calls), "error": type(error).__name__},
                )
                continue
            written += len(calls)
        return written


async def _wait_any(stop: asyncio.Event, wakeup: asyncio.Event) -> None:
    waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(wakeup.wait())]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiter
