"""SQL of erasure tombstones and of the tenant's receipt-signing key. Flushes, never commits."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import ReceiptKey, UserErasure
from app.tenancy.principal import Scope


@dataclass(frozen=True, slots=True)
class ErasureRow:
    erasure_id: uuid.UUID
    requested_by: uuid.UUID | None
    started_at: datetime
    finished_at: datetime | None
    removed: dict[str, int]
    receipt: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class KeyPair:
    key_id: str
    public_key: bytes
    private_key: bytes


_COLUMNS = (
    UserErasure.erasure_id,
    UserErasure.requested_by,
    UserErasure.started_at,
    UserErasure.finished_at,
    UserErasure.removed,
    UserErasure.receipt,
)


class TombstoneRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.tenant_id = scope.tenant_id

    async def unfinished(self, user_digest: str) -> ErasureRow | None:
        """The user's erasure in progress, locked (one erasure of a user runs at a time)."""
        row = (
            await self.db.execute(
                select(*_COLUMNS)
                .where(
                    UserErasure.tenant_id == self.tenant_id,
                    UserErasure.user_id_sha256 == user_digest,
                    UserErasure.finished_at.is_(None),
                )
                .with_for_update()
            )
        ).first()
        return None if row is None else ErasureRow(*row)

    async def start(self, user_digest: str, requested_by: uuid.UUID | None) -> ErasureRow:
        """A new erasure, or the one already in progress (a concurrent start waits for it)."""
        await self.db.execute(
            pg_insert(UserErasure)
            .values(tenant_id=self.tenant_id, user_id_sha256=user_digest, requested_by=requested_by)
            .on_conflict_do_nothing(
                index_elements=["tenant_id", "user_id_sha256"],
                index_where=text("finished_at IS NULL"),
            )
        )
        started = await self.unfinished(user_digest)
        assert started is not None  # noqa: S101 - inserted or found in this transaction
        return started

    async def save_removed(self, erasure_id: uuid.UUID, removed: Mapping[str, int]) -> None:
        """The counts so far (the row is locked by this transaction: no step is lost)."""
        await self.db.execute(
            update(UserErasure)
            .where(UserErasure.tenant_id == self.tenant_id, UserErasure.erasure_id == erasure_id)
            .values(removed=dict(removed))
        )

    async def finish(self, erasure_id: uuid.UUID) -> datetime:
        finished: datetime | None = await self.db.scalar(
            update(UserErasure)
            .where(UserErasure.tenant_id == self.tenant_id, UserErasure.erasure_id == erasure_id)
            .values(finished_at=func.now())
            .returning(UserErasure.finished_at)
        )
        assert finished is not None  # noqa: S101 - the row was locked by this transaction
        return finished

    async def keep_receipt(self, erasure_id: uuid.UUID, receipt: Mapping[str, Any]) -> None:
        await self.db.execute(
            update(UserErasure)
            .where(UserErasure.tenant_id == self.tenant_id, UserErasure.erasure_id == erasure_id)
            .values(receipt=dict(receipt))
        )

    async def get(self, erasure_id: uuid.UUID) -> ErasureRow | None:
        row = (
            await self.db.execute(
                select(*_COLUMNS).where(
                    UserErasure.tenant_id == self.tenant_id, UserErasure.erasure_id == erasure_id
                )
            )
        ).first()
        return None if row is None else ErasureRow(*row)

    async def last_finished(self, user_digest: str) -> ErasureRow | None:
        row = (
            await self.db.execute(
                select(*_COLUMNS)
                .where(
                    UserErasure.tenant_id == self.tenant_id,
                    UserErasure.user_id_sha256 == user_digest,
                    UserErasure.finished_at.is_not(None),
                )
                .order_by(UserErasure.finished_at.desc())
                .limit(1)
            )
        ).first()
        return None if row is None else ErasureRow(*row)

    # --- the signing key ----------------------------------------------------------------------

    async def key_pair(self) -> KeyPair | None:
        row = (
            await self.db.execute(
                select(ReceiptKey.key_id, ReceiptKey.public_key, ReceiptKey.private_key).where(
                    ReceiptKey.tenant_id == self.tenant_id
                )
            )
        ).first()
        return None if row is None else KeyPair(*row)

    async def add_key_pair(self, key_id: str, public_key: bytes, private_key: bytes) -> None:
        """Store a key pair unless the tenant has one already (the first one made wins)."""
        await self.db.execute(
            pg_insert(ReceiptKey)
            .values(
                tenant_id=self.tenant_id,
                key_id=key_id,
                public_key=public_key,
                private_key=private_key,
            )
            .on_conflict_do_nothing(index_elements=["tenant_id"])
        )
