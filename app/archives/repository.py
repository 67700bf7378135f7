"""SQL for archives and section versions, scoped to one tenant (the queue across tenants is
``app.archives.queue``).

Reads of a user-bound credential only see archives of that user's agent sessions. Flushes,
never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Table, Update, and_, case, exists, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import load_only
from sqlalchemy.sql.selectable import ScalarSelect

from app.archives.claimable import FINISHED, ClaimableRepository
from app.archives.records import SectionVersionRow, SplitRow
from app.archives.working_memory import (
    RecordedDecision,
    WorkingMemory,
    decision_of,
    working_memory_of,
)
from app.models import (
    AgentSession,
    Archive,
    ArchiveStatus,
    Message,
    WmSectionVersion,
)
from app.sessions.lineage import Piece
from app.sessions.lineage_repository import LineageReader
from app.tenancy.principal import Scope
from app.wm.sections import Section

INDEX_COLUMNS = (
    Archive.archive_seq,
    Archive.start_seq,
    Archive.end_seq,
    Archive.status,
    Archive.abstract,
    Archive.keep_recent_count,
    Archive.tail_start_seq,
    Archive.tail_end_seq,
    Archive.tail_message_count,
    Archive.tail_tokens,
)
"""What a context's archive index and preserved tail read: never the overview Markdown."""

_DECISION_COLUMNS = (
    WmSectionVersion.op_requested,
    WmSectionVersion.op_applied,
    WmSectionVersion.guard,
    WmSectionVersion.reason,
    WmSectionVersion.details,
)


class ArchiveRepository:
    """Archives and section versions of one agent session; a fork's reads follow its lineage
    into the agent sessions that hold its older archives (writes touch its own rows only)."""

    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope
        self.lineage = LineageReader(db, scope)
        self.claimable = ClaimableRepository(db, scope)

    async def _pieces(
        self, agent_session_id: uuid.UUID, after: int = 0, upto: int | None = None
    ) -> list[Piece]:
        """Archives ``after < archive_seq <= upto`` of the history, by holder, oldest first."""
        return (await self.lineage.of(agent_session_id)).archive_pieces(after, upto)

    def _in(
        self, piece: Piece, table: type[Archive] | type[WmSectionVersion] = Archive
    ) -> list[Any]:
        """Rows of ``table`` inside one lineage piece that this scope may see."""
        conditions = self._of(piece.agent_session_id, table)
        conditions.append(table.archive_seq > piece.after)
        if piece.upto is not None:
            conditions.append(table.archive_seq <= piece.upto)
        return conditions

    async def _holder(self, agent_session_id: uuid.UUID, archive_seq: int) -> uuid.UUID:
        return (await self.lineage.of(agent_session_id)).holder_of_archive(archive_seq)

    def _of(
        self,
        agent_session_id: uuid.UUID,
        table: type[Archive] | type[WmSectionVersion] = Archive,
    ) -> list[Any]:
        """Rows of ``table`` (archives, or section versions) of one agent session that this
        scope may see: its tenant's, and only its user's agent sessions for a user-bound key."""
        conditions: list[Any] = [
            table.tenant_id == self.scope.tenant_id,
            table.agent_session_id == agent_session_id,
        ]
        if self.scope.user_id is not None:
            conditions.append(
                exists().where(
                    AgentSession.tenant_id == table.tenant_id,
                    AgentSession.agent_session_id == table.agent_session_id,
                    AgentSession.user_id == self.scope.user_id,
                )
            )
        return conditions

    async def split_rows(
        self, agent_session_id: uuid.UUID, *, after_seq: int, upto_seq: int, limit: int
    ) -> list[SplitRow]:
        """Messages ``after_seq < seq <= upto_seq``, newest first, at most ``limit``."""
        result = await self.db.execute(
            select(
                Message.seq,
                Message.role,
                Message.message.has_key("tool_calls"),
                Message.token_count,
                Message.turn,
            )
            .where(
                Message.tenant_id == self.scope.tenant_id,
                Message.agent_session_id == agent_session_id,
                Message.seq > after_seq,
                Message.seq <= upto_seq,
            )
            .order_by(Message.seq.desc())
            .limit(limit)
        )
        return [SplitRow(*row) for row in result.all()]

    def turn_at(self, agent_session_id: uuid.UUID, seq: int) -> ScalarSelect[int | None]:
        """The turn of message ``seq``, as a value of another statement (no round trip)."""
        return (
            select(Message.turn)
            .where(
                Message.tenant_id == self.scope.tenant_id,
                Message.agent_session_id == agent_session_id,
                Message.seq == seq,
            )
            .scalar_subquery()
        )

    async def owner(self, agent_session_id: uuid.UUID) -> tuple[str | None, str | None]:
        """The ``user_id`` and ``agent_id`` labels of an agent session (long-term memory's
        scope)."""
        row = (
            await self.db.execute(
                select(AgentSession.user_id, AgentSession.agent_id).where(
                    AgentSession.tenant_id == self.scope.tenant_id,
                    AgentSession.agent_session_id == agent_session_id,
                )
            )
        ).one()
        return row.user_id, row.agent_id

    async def insert(self, values: dict[str, Any]) -> Archive:
        result = await self.db.execute(
            insert(Archive).values(tenant_id=self.scope.tenant_id, **values).returning(Archive)
        )
        archive = result.scalar_one()
        await self.claimable.follow(archive.agent_session_id, archive.status, func.now())
        return archive

    async def insert_pending(self, values: dict[str, Any], counters: Update) -> Archive:
        """A commit's pending archive, its agent session's ``counters`` and its queue row (due
        now) in one statement: the two writes run as ``WITH``s of the archive's insert, whose
        ``RETURNING`` is the row the commit answers with."""
        agent_session_id = values["agent_session_id"]
        statement = (
            insert(Archive)
            .values(tenant_id=self.scope.tenant_id, status=ArchiveStatus.PENDING, **values)
            .add_cte(counters.cte("counters"))
            .add_cte(self.claimable.due(agent_session_id, func.now()).cte("queued"))
            .returning(Archive)
        )
        return (await self.db.execute(statement)).scalar_one()

    async def get(
        self, agent_session_id: uuid.UUID, archive_seq: int, *, lock: bool = False
    ) -> Archive | None:
        """Archive ``archive_seq`` of the history (a fork's older ones are its ancestors'); with
        ``lock``, to change it: only the agent session's own."""
        holder = agent_session_id if lock else await self._holder(agent_session_id, archive_seq)
        statement = select(Archive).where(*self._of(holder), Archive.archive_seq == archive_seq)
        if lock:
            statement = statement.with_for_update()
        return await self.db.scalar(statement)

    async def _newest_first(
        self, agent_session_id: uuid.UUID, before_seq: int | None, limit: int, **options: Any
    ) -> list[Archive]:
        upto = None if before_seq is None else before_seq - 1
        found: list[Archive] = []
        for piece in reversed(await self._pieces(agent_session_id, 0, upto)):
            if len(found) >= limit:
                break
            statement = select(Archive).where(*self._in(piece))
            if "columns" in options:
                statement = statement.options(load_only(*options["columns"], raiseload=True))
            statement = statement.order_by(Archive.archive_seq.desc()).limit(limit - len(found))
            found += (await self.db.scalars(statement)).all()
        return found

    async def page(
        self, agent_session_id: uuid.UUID, *, before_seq: int | None, limit: int
    ) -> Sequence[Archive]:
        return await self._newest_first(agent_session_id, before_seq, limit)

    async def index(self, agent_session_id: uuid.UUID, *, limit: int) -> Sequence[Archive]:
        """The newest archives, newest first, with only ``INDEX_COLUMNS`` loaded."""
        return await self._newest_first(agent_session_id, None, limit, columns=INDEX_COLUMNS)

    async def working_memory(
        self,
        agent_session_id: uuid.UUID,
        *,
        before_seq: int | None = None,
        archive_seq: int | None = None,
        with_decisions: bool = False,
    ) -> WorkingMemory | None:
        """The working memory of the newest done archive (before ``before_seq``), or of done
        archive ``archive_seq``; ``None`` when there is none. One statement per lineage piece
        (one for an agent session that is no fork), newest piece first: the archive row by
        index, then its seven section rows by primary key."""
        upto = archive_seq if before_seq is None else before_seq - 1
        if archive_seq is not None:
            upto = archive_seq if before_seq is None else min(archive_seq, before_seq - 1)
        after = 0 if archive_seq is None else archive_seq - 1
        for piece in reversed(await self._pieces(agent_session_id, after, upto)):
            found = await self._working_memory_in(piece, with_decisions=with_decisions)
            if found is not None:
                return found
        return None

    async def _working_memory_in(
        self, piece: Piece, *, with_decisions: bool
    ) -> WorkingMemory | None:
        newest = select(
            Archive.tenant_id,
            Archive.agent_session_id,
            Archive.archive_seq,
            Archive.end_seq,
            Archive.generator,
            Archive.wm_tokens,
            func.coalesce(
                Archive.legacy_overview, case((Archive.is_legacy, Archive.overview))
            ).label("legacy_text"),
        ).where(
            *self._in(piece),
            Archive.status == ArchiveStatus.DONE,
            # A done archive imported without a working memory (its store had it switched off)
            # is no prior: its messages stay raw, as in the store it came from.
            or_(
                Archive.overview.is_not(None),
                Archive.legacy_overview.is_not(None),
                Archive.is_legacy,
            ),
        )
        chosen = newest.order_by(Archive.archive_seq.desc()).limit(1).subquery()
        columns: list[Any] = [
            chosen.c.archive_seq,
            chosen.c.end_seq,
            chosen.c.generator,
            chosen.c.wm_tokens,
            chosen.c.legacy_text,
            WmSectionVersion.section,
            WmSectionVersion.content,
            WmSectionVersion.token_count,
            WmSectionVersion.sources,
        ]
        if with_decisions:
            columns += _DECISION_COLUMNS
        statement = (
            select(*columns)
            .select_from(chosen)
            .outerjoin(
                WmSectionVersion,
                and_(
                    WmSectionVersion.tenant_id == chosen.c.tenant_id,
                    WmSectionVersion.agent_session_id == chosen.c.agent_session_id,
                    WmSectionVersion.archive_seq == chosen.c.archive_seq,
                ),
            )
            .order_by(WmSectionVersion.position)
        )
        rows = (await self.db.execute(statement)).all()
        return working_memory_of(rows, with_decisions=with_decisions) if rows else None

    async def decisions(
        self, agent_session_id: uuid.UUID, archive_seq: int
    ) -> list[RecordedDecision]:
        """The seven decisions recorded with an archive's section versions (none until done)."""
        holder = await self._holder(agent_session_id, archive_seq)
        rows = await self.db.execute(
            select(WmSectionVersion.section, *_DECISION_COLUMNS)
            .where(
                WmSectionVersion.tenant_id == self.scope.tenant_id,
                WmSectionVersion.agent_session_id == holder,
                WmSectionVersion.archive_seq == archive_seq,
            )
            .order_by(WmSectionVersion.position)
        )
        return [decision_of(row) for row in rows.all()]

    async def failed_between(
        self,
        agent_session_id: uuid.UUID,
        *,
        after_seq: int,
        before_seq: int,
        with_done: bool = False,
    ) -> Sequence[Archive]:
        """The failed and cleared archives between two (and, ``with_done``, the done ones too:
        between a prior working memory and the next archive, those are the archives done
        without a working memory)."""
        statuses = [ArchiveStatus.FAILED, ArchiveStatus.CLEARED]
        if with_done:
            statuses.append(ArchiveStatus.DONE)
        found: list[Archive] = []
        for piece in await self._pieces(agent_session_id, after_seq, before_seq - 1):
            found += (
                await self.db.scalars(
                    select(Archive)
                    .where(*self._in(piece), Archive.status.in_(statuses))
                    .order_by(Archive.archive_seq)
                )
            ).all()
        return found

    async def history(
        self,
        agent_session_id: uuid.UUID,
        *,
        section: Section | None,
        after: tuple[int, int],
        limit: int,
        from_archive: int | None = None,
        to_archive: int | None = None,
    ) -> Sequence[WmSectionVersion]:
        """Section versions after ``(archive_seq, position)``, in that order, optionally only
        of archives ``from_archive..to_archive`` (both inclusive)."""
        found: list[WmSectionVersion] = []
        lowest = max(after[0] - 1, 0 if from_archive is None else from_archive - 1)
        for piece in await self._pieces(agent_session_id, lowest, to_archive):
            if len(found) >= limit:
                break
            statement = select(WmSectionVersion).where(
                *self._in(piece, WmSectionVersion),
                func.row(WmSectionVersion.archive_seq, WmSectionVersion.position)
                > func.row(*after),
            )
            if section is not None:
                statement = statement.where(WmSectionVersion.section == section.value)
            statement = statement.order_by(
                WmSectionVersion.archive_seq, WmSectionVersion.position
            ).limit(limit - len(found))
            found += (await self.db.scalars(statement)).all()
        return found

    async def insert_sections(self, rows: Sequence[SectionVersionRow]) -> None:
        """All of an archive's section versions in one multi-row ``INSERT`` (one round trip),
        compiled once per process rather than once per archive: rows given as parameters with a
        ``RETURNING`` go as one batched statement (without it, as one statement per row)."""
        if not rows:
            return
        # The table, not the entity: the ORM's bulk insert would leave out the NULL values and
        # split rows that differ in them into statements of their own.
        table = cast("Table", WmSectionVersion.__table__)
        await self.db.execute(
            insert(table).returning(table.c.position),
            [row.values(self.scope.tenant_id) for row in rows],
        )

    async def set_fields(
        self, agent_session_id: uuid.UUID, archive_seq: int, **values: Any
    ) -> None:
        change = (
            update(Archive)
            .where(
                Archive.tenant_id == self.scope.tenant_id,
                Archive.agent_session_id == agent_session_id,
                Archive.archive_seq == archive_seq,
            )
            .values(**values)
        )
        status = values.get("status")
        if status in FINISHED:
            # The archive and its queue row (the next archive is due at once): one statement.
            await self.claimable.finished_with(agent_session_id, change)
            return
        await self.db.execute(change)
        await self.claimable.follow(
            agent_session_id, status, values.get("available_at", func.now())
        )

    async def reschedule(
        self, agent_session_id: uuid.UUID, archive_seq: int, *, delay_s: float, **values: Any
    ) -> None:
        await self.set_fields(
            agent_session_id,
            archive_seq,
            status=ArchiveStatus.PENDING,
            lease_until=None,
            available_at=func.now() + func.make_interval(0, 0, 0, 0, 0, 0, delay_s),
            **values,
        )
