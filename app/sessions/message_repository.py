"""SQL for the messages of agent sessions, and their retractions, scoped to one tenant.

Row-level security enforces the tenant too; the explicit filters keep plans index-only and make
intent visible. Messages come back as ``StoredMessage`` values, never as ORM rows. Flushes,
never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Exists, and_, exists, false, func, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Message, MessageRedaction, MessageRetraction
from app.sessions.lineage import Piece
from app.sessions.lineage_repository import LineageReader
from app.sessions.records import StoredMessage
from app.tenancy.principal import Scope

_STORED_COLUMNS = (
    Message.seq,
    Message.role,
    Message.turn,
    Message.message,
    Message.token_count,
    Message.metadata_,
    Message.created_at,
    # Each read marks what was retracted or redacted (a primary-key lookup per message).
    select(MessageRetraction.retracted_at)
    .where(
        MessageRetraction.tenant_id == Message.tenant_id,
        MessageRetraction.agent_session_id == Message.agent_session_id,
        MessageRetraction.seq == Message.seq,
    )
    .correlate(Message)
    .scalar_subquery(),
    select(MessageRedaction.redacted_at)
    .where(
        MessageRedaction.tenant_id == Message.tenant_id,
        MessageRedaction.agent_session_id == Message.agent_session_id,
        MessageRedaction.seq == Message.seq,
    )
    .correlate(Message)
    .scalar_subquery(),
)


def in_piece(scope: Scope, piece: Piece, table: Any = Message) -> ColumnElement[bool]:
    """Rows of ``table`` (messages, or rows keyed like them) inside one lineage piece."""
    conditions: list[Any] = [
        table.tenant_id == scope.tenant_id,
        table.agent_session_id == piece.agent_session_id,
        table.seq > piece.after,
    ]
    if piece.upto is not None:
        conditions.append(table.seq <= piece.upto)
    return and_(*conditions)


def in_pieces(scope: Scope, pieces: Sequence[Piece], table: Any = Message) -> ColumnElement[bool]:
    """Rows inside any of the pieces (one index range each)."""
    if not pieces:
        return false()
    if len(pieces) == 1:
        return in_piece(scope, pieces[0], table)
    return or_(*(in_piece(scope, piece, table) for piece in pieces))


class MessageRepository:
    """Reads of one agent session's history: a fork's follow its lineage into the agent
    sessions that hold its older messages (``app.sessions.lineage``)."""

    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope
        self.lineage = LineageReader(db, scope)

    async def _of(
        self, agent_session_id: uuid.UUID, after_seq: int = 0, upto_seq: int | None = None
    ) -> ColumnElement[bool]:
        pieces = (await self.lineage.of(agent_session_id)).seq_pieces(after_seq, upto_seq)
        return in_pieces(self.scope, pieces)

    async def tool_call_ids(self, agent_session_id: uuid.UUID) -> set[str]:
        """The call ids the agent session's tool results answer."""
        statement = select(Message.message["tool_call_id"].astext).where(
            await self._of(agent_session_id), Message.role == "tool"
        )
        return {value for value in (await self.db.scalars(statement)).all() if value}

    async def tool_results(
        self, agent_session_id: uuid.UUID, *, tool_call_id: str | None = None
    ) -> list[StoredMessage]:
        """The agent session's tool results (``tool`` messages), oldest first; with
        ``tool_call_id``, the one that answers that call (call ids are unique per session)."""
        statement = select(*_STORED_COLUMNS).where(
            await self._of(agent_session_id), Message.role == "tool"
        )
        if tool_call_id is not None:
            statement = statement.where(Message.message["tool_call_id"].astext == tool_call_id)
        rows = await self.db.execute(statement.order_by(Message.seq))
        return [StoredMessage(*row) for row in rows.all()]

    async def tool_calls(self, agent_session_id: uuid.UUID) -> list[Any]:
        """The ``tool_calls`` lists of the agent session's assistant messages, oldest first."""
        statement = (
            select(Message.message["tool_calls"])
            .where(
                await self._of(agent_session_id),
                Message.role == "assistant",
                Message.message.has_key("tool_calls"),
            )
            .order_by(Message.seq)
        )
        return list((await self.db.scalars(statement)).all())

    async def sum_tokens(self, agent_session_id: uuid.UUID, after_seq: int, upto_seq: int) -> int:
        """Tokens of the messages with ``after_seq < seq <= upto_seq``."""
        if upto_seq <= after_seq:
            return 0
        total = await self.db.scalar(
            select(func.coalesce(func.sum(Message.token_count), 0)).where(
                await self._of(agent_session_id, after_seq, upto_seq)
            )
        )
        return int(total or 0)

    async def read(
        self,
        agent_session_id: uuid.UUID,
        *,
        after_seq: int,
        limit: int,
        upto_seq: int | None = None,
        without_retracted: bool = False,
    ) -> list[StoredMessage]:
        """Messages with ``after_seq < seq [<= upto_seq]``, oldest first, at most ``limit``;
        with ``without_retracted``, the retracted ones left out (the seqs then have gaps).
        A fork's range is read piece by piece, oldest first, each by its index range."""
        found: list[StoredMessage] = []
        lineage = await self.lineage.of(agent_session_id)
        for piece in lineage.seq_pieces(after_seq, upto_seq):
            if len(found) >= limit:
                break
            statement = select(*_STORED_COLUMNS).where(in_piece(self.scope, piece))
            if without_retracted:
                statement = statement.where(~_retracted())
            rows = await self.db.execute(statement.order_by(Message.seq).limit(limit - len(found)))
            found += [StoredMessage(*row) for row in rows.all()]
        return found

    async def read_seqs(
        self, agent_session_id: uuid.UUID, seqs: Sequence[int]
    ) -> list[StoredMessage]:
        """The messages with these seqs (those that exist), oldest first."""
        statement = select(*_STORED_COLUMNS).where(
            await self._of(agent_session_id), Message.seq.in_(sorted(set(seqs)))
        )
        rows = await self.db.execute(statement.order_by(Message.seq))
        return [StoredMessage(*row) for row in rows.all()]


def _retracted() -> Exists:
    """The message of the enclosing query has a retraction (an anti-join on its primary key)."""
    return exists().where(
        MessageRetraction.tenant_id == Message.tenant_id,
        MessageRetraction.agent_session_id == Message.agent_session_id,
        MessageRetraction.seq == Message.seq,
    )


class RetractionRepository:
    """Retractions of live messages: recorded once each, never removed. A fork's live messages
    are always its own; the retractions of what it shares are read through its lineage."""

    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope
        self.lineage = LineageReader(db, scope)

    async def newest_live(
        self, agent_session_id: uuid.UUID, archived_upto_seq: int
    ) -> StoredMessage | None:
        """The newest message after ``archived_upto_seq`` that is not retracted."""
        row = (
            await self.db.execute(
                select(*_STORED_COLUMNS)
                .where(
                    Message.tenant_id == self.scope.tenant_id,
                    Message.agent_session_id == agent_session_id,
                    Message.seq > archived_upto_seq,
                    ~_retracted(),
                )
                .order_by(Message.seq.desc())
                .limit(1)
            )
        ).first()
        return None if row is None else StoredMessage(*row)

    async def message(self, agent_session_id: uuid.UUID, seq: int) -> StoredMessage | None:
        row = (
            await self.db.execute(
                select(*_STORED_COLUMNS).where(
                    Message.tenant_id == self.scope.tenant_id,
                    Message.agent_session_id == agent_session_id,
                    Message.seq == seq,
                )
            )
        ).first()
        return None if row is None else StoredMessage(*row)

    async def record(self, agent_session_id: uuid.UUID, seq: int) -> datetime:
        """Retract ``seq``; the time it was retracted (the first time, if it already was)."""
        inserted: datetime | None = await self.db.scalar(
            pg_insert(MessageRetraction)
            .values(tenant_id=self.scope.tenant_id, agent_session_id=agent_session_id, seq=seq)
            .on_conflict_do_nothing()
            .returning(MessageRetraction.retracted_at)
        )
        if inserted is not None:
            return inserted
        existing = await self.db.scalar(
            select(MessageRetraction.retracted_at).where(
                MessageRetraction.tenant_id == self.scope.tenant_id,
                MessageRetraction.agent_session_id == agent_session_id,
                MessageRetraction.seq == seq,
            )
        )
        if existing is None:
            raise RuntimeError(f"retraction of message {seq} vanished inside its transaction")
        return existing
