"""SQL for idempotency keys, in the tenant's transaction (row-level security applies).

Two forms of the same four statements — claim, read, answer, release: SQLAlchemy Core for the
commit (inside its phase-1 transaction), and module-level driver strings for the append path,
which runs on the autocommit pool's connection inside a group commit (``docs/database.md``,
rule 3). A claim is an ``INSERT … ON CONFLICT DO NOTHING``: a second request with the same key
waits on the first one's row until that transaction ends, then finds its answer. Flushes, never
commits.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import psycopg
from sqlalchemy import delete, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import token_for
from app.models import IdempotencyKey


@dataclass(frozen=True, slots=True)
class StoredKey:
    """A key's row: the request it was first used for and that request's answer (``None``
    only inside the transaction that claimed it)."""

    request_sha256: str
    status_code: int | None
    response_body: bytes | None


_COLUMNS = (
    IdempotencyKey.request_sha256,
    IdempotencyKey.status_code,
    IdempotencyKey.response_body,
)


class IdempotencyRepository:
    def __init__(self, db: AsyncSession, tenant_id: uuid.UUID) -> None:
        self.db = db
        self.tenant_id = tenant_id

    def _key(self, key: str) -> list[Any]:
        return [IdempotencyKey.tenant_id == self.tenant_id, IdempotencyKey.idempotency_key == key]

    async def claim(
        self, key: str, request_sha256: str, agent_session_id: uuid.UUID | None = None
    ) -> bool:
        """Take the key for this transaction's request; ``False`` when it was taken (the
        statement waits for a transaction still holding it to end)."""
        statement = (
            pg_insert(IdempotencyKey)
            .values(
                tenant_id=self.tenant_id,
                idempotency_key=key,
                request_sha256=request_sha256,
                agent_session_id=agent_session_id,
            )
            .on_conflict_do_nothing(index_elements=["tenant_id", "idempotency_key"])
            .returning(IdempotencyKey.idempotency_key)
        )
        return (await self.db.execute(statement)).first() is not None

    async def get(self, key: str) -> StoredKey | None:
        row = (await self.db.execute(select(*_COLUMNS).where(*self._key(key)))).first()
        return None if row is None else StoredKey(*row)

    async def answer(self, key: str, *, status_code: int, body: bytes) -> None:
        await self.db.execute(
            update(IdempotencyKey)
            .where(*self._key(key))
            .values(status_code=status_code, response_body=body)
        )

    async def release(self, key: str) -> None:
        await self.db.execute(delete(IdempotencyKey).where(*self._key(key)))


# The append path's forms of the same statements (driver level: they run in the group commit's
# transaction on the autocommit pool's connection, after the tenant setup of each one).

_SET_TENANT = "SELECT set_config('app.tenant_token', %(token)s, true)"
_CLAIM = """
INSERT INTO idempotency_keys (tenant_id, idempotency_key, request_sha256, agent_session_id)
VALUES (%(tenant_id)s, %(key)s, %(request_sha256)s, %(agent_session_id)s)
ON CONFLICT DO NOTHING
RETURNING 1
"""
_GET = """
SELECT request_sha256, status_code, response_body
FROM idempotency_keys WHERE tenant_id = %(tenant_id)s AND idempotency_key = %(key)s
"""
_ANSWER = """
UPDATE idempotency_keys SET status_code = %(status_code)s, response_body = %(body)s
WHERE tenant_id = %(tenant_id)s AND idempotency_key = %(key)s
"""
_RELEASE = """
DELETE FROM idempotency_keys WHERE tenant_id = %(tenant_id)s AND idempotency_key = %(key)s
"""


async def start_claim(
    connection: psycopg.AsyncConnection[Any],
    tenant_id: uuid.UUID,
    key: str,
    request_sha256: str,
    agent_session_id: uuid.UUID | None = None,
) -> tuple[psycopg.AsyncCursor[Any], psycopg.AsyncCursor[Any]]:
    """Send the claim and the read of the key's row (in pipeline mode, with other statements);
    ``finish_claim`` reads what they found."""
    values = {
        "tenant_id": str(tenant_id),
        "token": token_for(tenant_id),
        "key": key,
        "request_sha256": request_sha256,
        "agent_session_id": None if agent_session_id is None else str(agent_session_id),
    }
    await connection.execute(_SET_TENANT, values)
    claimed = await connection.execute(_CLAIM, values)
    row = await connection.execute(_GET, values)
    return claimed, row


async def finish_claim(
    cursors: tuple[psycopg.AsyncCursor[Any], psycopg.AsyncCursor[Any]],
) -> tuple[bool, StoredKey]:
    """Whether the claim took the key, and the key's row (the claim's own, or the first
    request's)."""
    claimed, row = cursors
    took = await claimed.fetchone() is not None
    found = await row.fetchone()
    if found is None:  # cannot happen: the key was just claimed or was already there
        raise RuntimeError("an idempotency key vanished inside its transaction")
    return took, StoredKey(*found)


async def send_answer(
    connection: psycopg.AsyncConnection[Any],
    tenant_id: uuid.UUID,
    key: str,
    *,
    status_code: int,
    body: bytes,
) -> None:
    values = {
        "tenant_id": str(tenant_id),
        "token": token_for(tenant_id),
        "key": key,
        "status_code": status_code,
        "body": body,
    }
    await connection.execute(_SET_TENANT, values)
    await connection.execute(_ANSWER, values)


async def send_release(
    connection: psycopg.AsyncConnection[Any], tenant_id: uuid.UUID, key: str
) -> None:
    values = {"tenant_id": str(tenant_id), "token": token_for(tenant_id), "key": key}
    await connection.execute(_SET_TENANT, values)
    await connection.execute(_RELEASE, values)


async def purge_expired(db: AsyncSession, *, ttl_s: float) -> int:
    """Delete every tenant's keys older than ``ttl_s`` (a privileged function)."""
    deleted = await db.scalar(
        text("SELECT workmem_purge_idempotency_keys(now() - make_interval(secs => :ttl_s))"),
        {"ttl_s": ttl_s},
    )
    return int(deleted or 0)
