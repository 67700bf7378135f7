"""Loading what a context is assembled from, then assembling it. Reads only; never commits.

Cost depends on the tail and the working memory, never on history: the agent-session row, the
newest archives by primary key (index columns only), the newest done archive's seven section rows,
and the messages after that archive read newest first in growing seq ranges until the budget is
full; with recall, one hybrid search of the user's long-term memories. Returns an
``AssembledContext``; the endpoint shapes the answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app import telemetry
from app.archives.service import ArchiveService
from app.archives.working_memory import WorkingMemory
from app.context.assembly import Assembly, Hint, Window
from app.context.budget import Budget
from app.context.clearing import Clearing, read_back_cost
from app.context.compose import Inputs, covered_tokens, finish, first_pass
from app.context.hint import (
    ARCHIVE_INDEX_LIMIT,
    ArchiveRange,
    listed_archives,
    system_prompt_addition,
)
from app.memories.records import SearchHit
from app.memories.service import RECALL_LIMIT, MemoryQuery, MemoryService
from app.models import AgentSession, Archive
from app.pins.records import Pin
from app.pins.service import pins_in_force
from app.sessions.records import StoredMessage
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal
from app.wm.tokens import TokenCounter, count_tokens

FIRST_READ_MESSAGES = 64
"""Messages read by the first query; each further query reads twice as many as the one before."""


@dataclass(frozen=True, slots=True)
class AssembledContext:
    """What one context request decided, with everything it was decided from."""

    agent_session: AgentSession
    budget: Budget
    index: Sequence[Archive]
    """The newest archives, newest first (index columns only)."""
    working_memory: WorkingMemory | None
    window: Window
    assembly: Assembly
    recall: RecallRequest | None = None
    recalled: int = 0
    """Memories the recall search returned (before the budget)."""
    clearing: Clearing | None = None
    fill: bool = False
    pins: tuple[Pin, ...] = ()
    """The pins in force, oldest first (those sent are the first of them)."""
    retracted: tuple[int, ...] = ()
    """Retracted seqs within the ranges read for the context (left out of it), ascending."""
    covered_start_seq: int | None = None
    """The oldest covered message read (fill), ``None`` when none was read: with the window,
    the ranges the context was assembled from."""


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """``recall=<query>`` of a context request, embedded before the transaction opened."""

    query: MemoryQuery
    limit: int = RECALL_LIMIT
    min_score: float = 0.0


class ContextService:
    def __init__(
        self, db: AsyncSession, principal: Principal, counter: TokenCounter = count_tokens
    ) -> None:
        self.db = db
        self.principal = principal
        self.agent_sessions = AgentSessionService(db, principal)
        self.archives = ArchiveService(db, principal)
        self.memories = MemoryService(db, principal)
        self.counter = counter

    @telemetry.traced(
        "workmem.context",
        lambda self, agent_session_id, budget, recall=None, **_: {
            **telemetry.ids(self.principal.tenant_id, agent_session_id),
            "workmem.recall": recall is not None,
        },
    )
    async def assemble(
        self,
        agent_session_id: uuid.UUID,
        budget: Budget,
        recall: RecallRequest | None = None,
        *,
        fill: bool = False,
        clearing: Clearing | None = None,
    ) -> AssembledContext:
        """The context of an agent session for this budget, with its pins in force as a
        ``[Pinned]`` block. With ``recall``, its user's long-term memories most relevant to the
        query go in as a ``[Relevant Memories]`` block; with ``fill``, the room left is given to
        the newest messages the summary covers (read only when there is room, and only as far
        back as the room reaches); with ``clearing``, older tool results are sent as a
        placeholder (and the messages are read as far back as they then reach)."""
        agent_session = await self.agent_sessions.get(agent_session_id)
        recalled: list[SearchHit] = []
        if recall is not None:
            recalled = await self.memories.recall(
                recall.query,
                user_id=agent_session.user_id,
                limit=recall.limit,
                min_score=recall.min_score,
            )
        working_memory = None
        if agent_session.archive_count:
            working_memory = await self.archives.working_memory(agent_session_id, visible=True)
        # Read after the working memory: an archive finishing in between then shows as done
        # (its messages still raw) rather than the summary coming from an archive listed as
        # still running.
        index = await self.archives.index(agent_session_id, limit=ARCHIVE_INDEX_LIMIT)
        floor_seq = working_memory.covered_end_seq if working_memory is not None else 0
        pins = await pins_in_force(self.db, self.principal.scope, agent_session_id)
        retracted: list[int] = []
        window = await self._window(agent_session, floor_seq, budget.usable, clearing, retracted)
        summary_archive = (
            None
            if working_memory is None
            else ArchiveRange(working_memory.archive_seq, 1, working_memory.covered_end_seq)
        )
        ranges = [ArchiveRange(a.archive_seq, a.start_seq, a.end_seq) for a in index]
        listed = listed_archives(budget.usable)
        hint = Hint(
            system_prompt_addition(
                str(agent_session_id),
                summary_archive=summary_archive,
                index=ranges,
                listed=listed,
                fill=fill,
            ),
            system_prompt_addition(
                str(agent_session_id),
                summary_archive=summary_archive,
                index=ranges,
                listed=listed,
                summary_sent=False,
            ),
        )

        inputs = Inputs(budget, window, working_memory, hint, recalled, pins, clearing, fill)
        result = first_pass(inputs, self.counter)
        tokens = covered_tokens(result, inputs)
        covered_start_seq = None
        if tokens:
            covered = await self._read_back(
                agent_session_id,
                upto=floor_seq,
                floor_seq=0,
                tokens=tokens,
                need_user=False,
                clearing=clearing,
                retracted=retracted,
            )
            covered_start_seq = covered[0].seq if covered else floor_seq + 1
            result = finish(result, inputs, covered, self.counter)
        return AssembledContext(
            agent_session,
            budget,
            index,
            working_memory,
            window,
            result,
            recall,
            len(recalled),
            clearing,
            fill,
            tuple(pins),
            tuple(sorted(retracted)),
            covered_start_seq,
        )

    async def _window(
        self,
        agent_session: AgentSession,
        floor_seq: int,
        usable: int,
        clearing: Clearing | None,
        retracted: list[int],
    ) -> Window:
        """The newest messages after ``floor_seq``, read newest first, until they hold more tokens
        than the whole usable budget and include a user message (older ones cannot be sent)."""
        candidates = await self._read_back(
            agent_session.agent_session_id,
            upto=agent_session.last_seq,
            floor_seq=floor_seq,
            tokens=usable,
            need_user=True,
            clearing=clearing,
            retracted=retracted,
        )
        return Window(candidates, floor_seq, agent_session.last_seq)

    async def _read_back(
        self,
        agent_session_id: uuid.UUID,
        *,
        upto: int,
        floor_seq: int,
        tokens: int,
        need_user: bool,
        clearing: Clearing | None = None,
        retracted: list[int] | None = None,
    ) -> list[StoredMessage]:
        """Messages ``floor_seq < seq <= upto``, oldest first, read newest first in growing
        ranges until they hold more than ``tokens`` (and a user message, if ``need_user``),
        each counted at the least it may cost in the context (a tool result may be cleared).
        The seqs of the ranges read that were left out as retracted go to ``retracted``."""
        chunks: list[list[StoredMessage]] = []
        size = FIRST_READ_MESSAGES
        read = 0
        seen_user = not need_user
        while upto > floor_seq and not (read > tokens and seen_user):
            after = max(floor_seq, upto - size)
            # seq is gap-free, so the range (after, upto] holds exactly upto - after messages.
            # Retracted messages are never sent (the agent withdrew them; they stay stored).
            chunk = await self.agent_sessions.messages_between(
                agent_session_id,
                after_seq=after,
                upto_seq=upto,
                limit=upto - after,
                without_retracted=True,
            )
            chunks.append(chunk)
            if retracted is not None and len(chunk) < upto - after:
                present = {message.seq for message in chunk}
                retracted += [seq for seq in range(after + 1, upto + 1) if seq not in present]
            read += sum(read_back_cost(message, clearing) for message in chunk)
            seen_user = seen_user or any(message.role == "user" for message in chunk)
            upto = after
            size *= 2
        return [message for chunk in reversed(chunks) for message in chunk]
