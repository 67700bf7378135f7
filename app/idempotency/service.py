"""Idempotency logic: claim a key for a write, or answer with what the key's first request got.

A claimed key is answered in the same transaction as the write it guards (``answer``), so either
both commit or neither does: a retry finds the answer, or finds no key and does the work. A key
first used for another request (method, path, user binding or body differ) is a 422. Only
successful writes keep their key: a request that failed can be retried under the same key and
does the work then. A commit that waits stores the answer it would give at once (202) with its
archive, then the answer it gives after waiting. Flushes, never commits.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import psycopg
from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import Conflict, InvalidInput
from app.idempotency import repository
from app.idempotency.keys import HEADER, RequestKey
from app.idempotency.repository import IdempotencyRepository, StoredKey


class KeyReused(InvalidInput):
    type, title = "idempotency_key_reused", "The Idempotency-Key was used for another request"


class KeyInProgress(Conflict):
    type, title = "idempotency_in_progress", "A request with this Idempotency-Key is in progress"
    retry_after_s = 1.0


@dataclass(frozen=True, slots=True)
class Answer:
    """A write's answer as stored with its key: sent as is, byte for byte, on every retry."""

    status_code: int
    body: bytes
    replayed: bool


def answer_of(stored: StoredKey, request: RequestKey) -> Answer | None:
    """The stored answer for a retry of ``request``; ``None`` while it has none yet."""
    if stored.request_sha256 != request.request_sha256:
        raise KeyReused(
            f"this {HEADER} was first used for a different request (another method, path, "
            "user or body); use a new key for a new request"
        )
    if stored.status_code is None or stored.response_body is None:
        return None
    return Answer(stored.status_code, stored.response_body, replayed=True)


def in_progress() -> KeyInProgress:
    return KeyInProgress(
        f"the first request with this {HEADER} is still being answered; retry shortly"
    )


class IdempotencyService:
    """The keys of one tenant, inside that tenant's transaction (commits)."""

    def __init__(self, db: AsyncSession, tenant_id: uuid.UUID) -> None:
        self.keys = IdempotencyRepository(db, tenant_id)

    async def claim(self, request: RequestKey) -> StoredKey | None:
        """``None`` when this transaction now holds the key; else the key's row (its first
        request's, checked to be this request)."""
        if await self.keys.claim(request.key, request.request_sha256, request.agent_session_id):
            return None
        stored = await self.keys.get(request.key)
        if stored is None:  # its holder rolled back between the two statements: claim again
            return await self.claim(request)
        answer_of(stored, request)
        return stored

    async def answer(self, request: RequestKey, *, status_code: int, body: bytes) -> Answer:
        await self.keys.answer(request.key, status_code=status_code, body=body)
        return Answer(status_code, body, replayed=False)


# The append path: the same steps on the group commit's connection (see ``repository``).

ClaimCursors = tuple[psycopg.AsyncCursor[Any], psycopg.AsyncCursor[Any]]


async def start_claim(
    connection: psycopg.AsyncConnection[Any], tenant_id: uuid.UUID, request: RequestKey
) -> ClaimCursors:
    return await repository.start_claim(
        connection, tenant_id, request.key, request.request_sha256, request.agent_session_id
    )


async def finish_claim(cursors: ClaimCursors, request: RequestKey) -> tuple[bool, Answer | None]:
    """``(True, None)`` when the key is now this transaction's; else ``(False, the first
    request's answer)``, the answer ``None`` while it has none yet."""
    took, stored = await repository.finish_claim(cursors)
    if took:
        return True, None
    return False, answer_of(stored, request)


async def send_answer(
    connection: psycopg.AsyncConnection[Any],
    tenant_id: uuid.UUID,
    request: RequestKey,
    *,
    status_code: int,
    body: bytes,
) -> None:
    await repository.send_answer(
        connection, tenant_id, request.key, status_code=status_code, body=body
    )


async def send_release(
    connection: psycopg.AsyncConnection[Any], tenant_id: uuid.UUID, request: RequestKey
) -> None:
    await repository.send_release(connection, tenant_id, request.key)


async def purge_expired(db: AsyncSession, *, ttl_s: float) -> int:
    """Forget every tenant's keys older than ``ttl_s`` (the archive workers run it)."""
    return await repository.purge_expired(db, ttl_s=ttl_s)
