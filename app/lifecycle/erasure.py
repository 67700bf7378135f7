"""Erasing a user: every row of theirs in the tenant goes, and a signed receipt says so.

An edge like the re-embedding command: it owns its transactions. The first records the
erasure (a tombstone: the user's digest, the key that asked, the start time); then one
transaction per agent session of the user removes that agent session with everything drawn from
it and quoting it (messages and their search words, archives and every section version, pins,
retractions, redactions, long-term memories and their events, webhook deliveries and stored
idempotency answers naming it or its memories, rows of any other table keyed by it) and adds
its counts to the tombstone; the last removes what is the user's alone (memories and events
with the user id, deliveries and answers quoting it, keys bound to the user, rows of any other
table with the user id), finishes the tombstone and signs the receipt.

A crash between transactions loses nothing: the tombstone stays unfinished with the counts of
every committed step, and erasing the user again goes on from it (one erasure of a user runs
at a time: each step locks its tombstone).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pydantic_core
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import Database
from app.errors import Conflict, NotFound
from app.lifecycle import receipts
from app.lifecycle.erasure_repository import KNOWN_TABLES, SESSION_TABLES, ErasureRepository
from app.lifecycle.tombstone_repository import ErasureRow, KeyPair, TombstoneRepository
from app.tenancy.principal import Scope

RECEIPT_TABLES = tuple(sorted(KNOWN_TABLES - {"user_erasures"}))
"""Tables every receipt lists (with 0 where nothing went); any other table appears when rows
went from it."""


class ErasureService:
    """One transaction's worth of an erasure."""

    def __init__(self, db: AsyncSession, tenant_id: uuid.UUID) -> None:
        scope = Scope(tenant_id=tenant_id)
        self.tenant_id = tenant_id
        self.rows = ErasureRepository(db, scope)
        self.tombstones = TombstoneRepository(db, scope)

    async def start(self, user_id: str, requested_by: uuid.UUID | None) -> uuid.UUID:
        """The erasure in progress for the user, or a new one; 404 when the tenant holds
        nothing of the user (never stored, or erased already)."""
        digest = receipts.user_digest(self.tenant_id, user_id)
        if await self.tombstones.unfinished(digest) is None:
            _, by_user = await self.rows.other_tables()
            if not await self.rows.holds_anything_of(user_id, by_user):
                raise NotFound("nothing of this user is stored (never, or erased already)")
        return (await self.tombstones.start(digest, requested_by)).erasure_id

    async def erase_next_session(self, erasure_id: uuid.UUID, user_id: str) -> bool:
        """Remove one agent session of the user; False when none is left (or the erasure was
        finished meanwhile by another request)."""
        tombstone = await self._locked(erasure_id, user_id)
        if tombstone is None:
            return False
        found = await self.rows.sessions_of(user_id, limit=1)
        if not found:
            return False
        removed = await self._erase_session(found[0], user_id)
        await self.tombstones.save_removed(erasure_id, _sum(tombstone.removed, removed))
        return True

    async def finish(self, erasure_id: uuid.UUID, user_id: str) -> dict[str, Any]:
        """Remove what is left of the user, finish the tombstone and sign its receipt."""
        tombstone = await self._locked(erasure_id, user_id)
        if tombstone is None:
            # Another request finished this erasure meanwhile: its receipt.
            finished = await self.tombstones.get(erasure_id)
            if finished is None or finished.receipt is None:
                raise Conflict("the erasure was interrupted; erase the user again to finish it")
            return finished.receipt
        removed: Counter[str] = Counter()
        # Agent sessions created while the steps ran go too.
        while found := await self.rows.sessions_of(user_id, limit=100):
            for agent_session_id in found:
                removed.update(await self._erase_session(agent_session_id, user_id))
        removed.update(await self._erase_user_rows(user_id))
        totals = _sum(tombstone.removed, removed)
        await self.tombstones.save_removed(erasure_id, totals)
        finished_at = await self.tombstones.finish(erasure_id)
        body: dict[str, Any] = {
            "format": receipts.FORMAT,
            "erasure_id": str(erasure_id),
            "tenant_id": str(self.tenant_id),
            "user_id_sha256": receipts.user_digest(self.tenant_id, user_id),
            "requested_by_api_key_id": (
                None if tombstone.requested_by is None else str(tombstone.requested_by)
            ),
            "started_at": tombstone.started_at.isoformat(),
            "finished_at": finished_at.isoformat(),
            "removed": {table: totals.get(table, 0) for table in _listed(totals)},
            "rows_removed": sum(totals.values()),
        }
        key = await self.signing_key()
        receipt = receipts.sign(body, key.private_key)
        await self.tombstones.keep_receipt(erasure_id, receipt)
        return receipt

    async def signing_key(self) -> KeyPair:
        """The tenant's key pair, made on first use."""
        key = await self.tombstones.key_pair()
        if key is None:
            private, public = receipts.new_key_pair()
            await self.tombstones.add_key_pair(receipts.key_id_of(public), public, private)
            key = await self.tombstones.key_pair()
        assert key is not None  # noqa: S101 - inserted, or another transaction's, just read
        return key

    async def _locked(self, erasure_id: uuid.UUID, user_id: str) -> ErasureRow | None:
        digest = receipts.user_digest(self.tenant_id, user_id)
        tombstone = await self.tombstones.unfinished(digest)
        if tombstone is None or tombstone.erasure_id != erasure_id:
            return None
        return tombstone

    async def _erase_session(self, agent_session_id: uuid.UUID, user_id: str) -> Counter[str]:
        removed: Counter[str] = Counter()
        if not await self.rows.lock_session(agent_session_id, user_id):
            return removed  # deleted meanwhile
        memory_ids = await self.rows.session_memories(agent_session_id)
        removed["memory_events"] = await self.rows.delete_memory_events(
            memory_ids, agent_session_id=agent_session_id
        )
        removed["memories"] = await self.rows.delete_memories(memory_ids)
        removed.update(await self._quoting([agent_session_id, *memory_ids]))
        removed["idempotency_keys"] += await self.rows.delete_answers_of(agent_session_id)
        by_session, _ = await self.rows.other_tables()
        for table in by_session:
            if await self.rows.may_delete(table):
                removed[table] += await self.rows.delete_session_rows(table, agent_session_id)
            else:  # append-only: its foreign key's cascade removes them with the agent session
                removed[table] += await self.rows.count_session_rows(table, agent_session_id)
        for table in SESSION_TABLES:
            removed[table] += await self.rows.delete_session_rows(table, agent_session_id)
        removed["agent_sessions"] = await self.rows.delete_session(agent_session_id)
        return removed

    async def _erase_user_rows(self, user_id: str) -> Counter[str]:
        removed: Counter[str] = Counter()
        memory_ids = await self.rows.user_memories(user_id)
        removed["memory_events"] = await self.rows.delete_memory_events(memory_ids, user_id=user_id)
        removed["memories"] = await self.rows.delete_memories(memory_ids)
        removed.update(await self._quoting(memory_ids, user_id=user_id))
        _, by_user = await self.rows.other_tables()
        for table in (*by_user, "api_keys"):
            removed[table] += await self.rows.delete_user_rows(table, user_id)
        return removed

    async def _quoting(self, ids: list[uuid.UUID], *, user_id: str | None = None) -> Counter[str]:
        """Webhook deliveries and stored answers naming any of ``ids`` (or the user id, as the
        JSON string they would quote it as)."""
        needles = [str(value) for value in ids]
        quoted = [] if user_id is None else [pydantic_core.to_json(user_id).decode()]
        deliveries, attempts = await self.rows.delete_deliveries_quoting([*needles, *quoted])
        answers = await self.rows.delete_answers_quoting(
            [needle.encode() for needle in (*needles, *quoted)]
        )
        return Counter(
            webhook_deliveries=deliveries, webhook_attempts=attempts, idempotency_keys=answers
        )


def _listed(totals: Mapping[str, int]) -> list[str]:
    return sorted({*RECEIPT_TABLES, *totals})


def _sum(before: Mapping[str, int], step: Mapping[str, int]) -> dict[str, int]:
    total = Counter({table: int(count) for table, count in before.items()})
    total.update({table: count for table, count in step.items() if count})
    return dict(total)


async def erase_user(
    database: Database, tenant_id: uuid.UUID, user_id: str, requested_by: uuid.UUID | None
) -> dict[str, Any]:
    """Erase ``user_id`` from the tenant, one agent session per transaction; the receipt."""
    async with database.tenant(tenant_id) as db:
        erasure_id = await ErasureService(db, tenant_id).start(user_id, requested_by)
    while True:
        async with database.tenant(tenant_id) as db:
            if not await ErasureService(db, tenant_id).erase_next_session(erasure_id, user_id):
                break
    async with database.tenant(tenant_id) as db:
        return await ErasureService(db, tenant_id).finish(erasure_id, user_id)


async def public_key(database: Database, tenant_id: uuid.UUID) -> KeyPair:
    """The tenant's receipt-signing key pair (made on first use)."""
    async with database.tenant(tenant_id) as db:
        return await ErasureService(db, tenant_id).signing_key()


async def stored_public_key(database: Database, tenant_id: uuid.UUID) -> bytes | None:
    """The tenant's public key if it has one (never makes one)."""
    async with database.tenant(tenant_id) as db:
        key = await ErasureService(db, tenant_id).tombstones.key_pair()
    return None if key is None else key.public_key
