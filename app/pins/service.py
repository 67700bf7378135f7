"""Pinning and unpinning, and the pins in force that contexts and working-memory prompts use.

Owns what may be pinned (a text, or a message's exact text, within the agent session's token
limit for all of its pins) and that every pin and unpin is recorded with who and when. Pins are
created under the agent-session row lock, so two concurrent pins cannot pass the limit together.
Flushes, never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import Conflict, InvalidInput, NotFound
from app.models import Pin as PinRow
from app.pins.records import Pin
from app.pins.repository import PinRepository
from app.pins.schemas import PinCreate
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal, Scope
from app.wm.sections import Section
from app.wm.tokens import TokenCounter, count_tokens, message_text


def _record(row: PinRow) -> Pin:
    return Pin(
        pin_id=row.pin_id,
        text=row.text,
        message_seq=row.message_seq,
        section=None if row.section is None else Section(row.section),
        token_count=row.token_count,
        pinned_by=row.pinned_by,
        created_at=row.created_at,
    )


async def pins_in_force(db: AsyncSession, scope: Scope, agent_session_id: uuid.UUID) -> list[Pin]:
    """The pins in force, oldest first, of an agent session the caller has already seen (a
    context request, an archive job)."""
    rows = await PinRepository(db, scope).listed(agent_session_id)
    return [_record(row) for row in rows]


async def pins_named(
    db: AsyncSession, scope: Scope, agent_session_id: uuid.UUID, pin_ids: Sequence[uuid.UUID]
) -> list[Pin]:
    """The pins with these ids (unpinned ones too; those that exist), in the order given, of an
    agent session the caller has already seen (a recorded context being rebuilt)."""
    rows = await PinRepository(db, scope).listed(agent_session_id, with_unpinned=True)
    by_id = {row.pin_id: _record(row) for row in rows}
    return [by_id[pin_id] for pin_id in pin_ids if pin_id in by_id]


class PinService:
    def __init__(
        self,
        db: AsyncSession,
        principal: Principal,
        *,
        max_tokens: int,
        counter: TokenCounter = count_tokens,
    ) -> None:
        self.principal = principal
        self.max_tokens = max_tokens
        self.counter = counter
        self.agent_sessions = AgentSessionService(db, principal)
        self.pins = PinRepository(db, principal.scope)

    async def listed(
        self, agent_session_id: uuid.UUID, *, with_unpinned: bool = False
    ) -> tuple[Sequence[PinRow], int]:
        """The pins (in force, or all ever made) and the tokens of those in force."""
        await self.agent_sessions.get(agent_session_id)
        rows = await self.pins.listed(agent_session_id, with_unpinned=with_unpinned)
        return rows, sum(row.token_count for row in rows if row.unpinned_at is None)

    async def pin(self, agent_session_id: uuid.UUID, body: PinCreate) -> PinRow:
        # The row lock serialises pins of one agent session: the limit holds under concurrency.
        await self.agent_sessions.get(agent_session_id, lock=True)
        if body.message_seq is not None:
            text = await self._message_text(agent_session_id, body.message_seq)
            holder = await self.agent_sessions.holder_of(agent_session_id, body.message_seq)
            if holder != agent_session_id:
                raise Conflict(
                    f"message {body.message_seq} is shared with agent session {holder}, this "
                    "fork's ancestor; pin its text instead"
                )
            field = "message_seq"
        else:
            text, field = body.text or "", "text"
        tokens = self.counter(text)
        held = await self.pins.active_tokens(agent_session_id)
        if held + tokens > self.max_tokens:
            message = (
                f"this pin has {tokens} tokens and the agent session's pins already hold {held}; "
                f"all pins of an agent session may hold at most {self.max_tokens} tokens "
                "(unpin one, or pin something shorter)"
            )
            raise InvalidInput(message, errors=[{"loc": ["body", field], "msg": message}])
        return await self.pins.insert(
            agent_session_id,
            text=text,
            message_seq=body.message_seq,
            section=None if body.section is None else body.section.value,
            token_count=tokens,
            actor=self.principal.api_key_id,
        )

    async def unpin(self, agent_session_id: uuid.UUID, pin_id: uuid.UUID) -> PinRow:
        await self.agent_sessions.get(agent_session_id)
        row = await self.pins.unpin(agent_session_id, pin_id, actor=self.principal.api_key_id)
        if row is None:
            raise NotFound(f"pin {pin_id} is not pinned in agent session {agent_session_id}")
        return row

    async def _message_text(self, agent_session_id: uuid.UUID, seq: int) -> str:
        found = await self.agent_sessions.messages_between(
            agent_session_id, after_seq=seq - 1, upto_seq=seq, limit=1
        )
        problem = None if found else f"agent session {agent_session_id} has no message {seq}"
        text = message_text(found[0].message) if found else ""
        if problem is None and not text.strip():
            problem = f"message {seq} has no text to pin"
        if problem is not None:
            raise InvalidInput(problem, errors=[{"loc": ["body", "message_seq"], "msg": problem}])
        return text
