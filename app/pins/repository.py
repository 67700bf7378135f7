"""SQL for pins and their events, scoped to one tenant. Flushes, never commits."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import ColumnElement, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Pin, PinEvent
from app.tenancy.principal import Scope


class PinRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    def _of(self, agent_session_id: uuid.UUID) -> list[ColumnElement[bool]]:
        return [Pin.tenant_id == self.scope.tenant_id, Pin.agent_session_id == agent_session_id]

    async def listed(
        self, agent_session_id: uuid.UUID, *, with_unpinned: bool = False
    ) -> Sequence[Pin]:
        """The agent session's pins, oldest first: those in force, or every one ever made."""
        statement = select(Pin).where(*self._of(agent_session_id))
        if not with_unpinned:
            statement = statement.where(Pin.unpinned_at.is_(None))
        statement = statement.order_by(Pin.created_at, Pin.pin_id)
        return (await self.db.scalars(statement)).all()

    async def active_tokens(self, agent_session_id: uuid.UUID) -> int:
        total = await self.db.scalar(
            select(func.sum(Pin.token_count)).where(
                *self._of(agent_session_id), Pin.unpinned_at.is_(None)
            )
        )
        return int(total or 0)

    async def insert(
        self,
        agent_session_id: uuid.UUID,
        *,
        text: str,
        message_seq: int | None,
        section: str | None,
        token_count: int,
        actor: uuid.UUID,
    ) -> Pin:
        row = (
            await self.db.execute(
                insert(Pin)
                .values(
                    tenant_id=self.scope.tenant_id,
                    agent_session_id=agent_session_id,
                    text=text,
                    message_seq=message_seq,
                    section=section,
                    token_count=token_count,
                    pinned_by=actor,
                )
                .returning(Pin)
            )
        ).scalar_one()
        await self._event(row, "pin", actor)
        return row

    async def unpin(
        self, agent_session_id: uuid.UUID, pin_id: uuid.UUID, *, actor: uuid.UUID
    ) -> Pin | None:
        """Unpin a pin in force; ``None`` when there is none with that id."""
        row = (
            await self.db.execute(
                update(Pin)
                .where(*self._of(agent_session_id), Pin.pin_id == pin_id, Pin.unpinned_at.is_(None))
                .values(unpinned_at=func.now(), unpinned_by=actor)
                .returning(Pin)
            )
        ).scalar_one_or_none()
        if row is not None:
            await self._event(row, "unpin", actor)
        return row

    async def _event(self, pin: Pin, event: str, actor: uuid.UUID) -> None:
        await self.db.execute(
            insert(PinEvent).values(
                tenant_id=self.scope.tenant_id,
                agent_session_id=pin.agent_session_id,
                pin_id=pin.pin_id,
                event=event,
                actor=actor,
                text=pin.text,
                message_seq=pin.message_seq,
            )
        )
