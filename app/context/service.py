"""Loading what a context is assembled from, and shaping the answer. Reads only; never commits.

Cost depends on the tail and the working memory, never on history: the agent-session row and the
newest archives by primary key, the newest done archive's seven section rows, and the messages
after that archive read newest first in growing seq ranges until the budget is full.
"""

from __future__ import annotations

import uuid
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.schemas import WorkingMemoryRead
from app.archives.service import ArchiveService
from app.context.assembly import (
    Assembly,
    Budget,
    Candidate,
    Hint,
    SummarySource,
    Window,
    assemble,
)
from app.context.hint import (
    ARCHIVE_INDEX_LIMIT,
    ArchiveRange,
    listed_archives,
    system_prompt_addition,
)
from app.context.schemas import (
    ArchiveIndexEntry,
    ContextRead,
    ContextStats,
    ContextTokens,
    ContextWorkingMemory,
    DroppedMessage,
    PreservedTail,
    SeqRange,
    WmCutRead,
)
from app.models import AgentSession, Archive
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal
from app.wm.sections import Section
from app.wm.tokens import TokenCounter, count_tokens

FIRST_READ_MESSAGES = 64
"""Messages read by the first query; each further query reads twice as many as the one before."""


def _in_context(
    archive: Archive, floor_seq: int, included: Sequence[int]
) -> Literal["summary", "raw", "partial", "none"]:
    if archive.end_seq <= floor_seq:
        return "summary"
    count = bisect_right(included, archive.end_seq) - bisect_left(included, archive.start_seq)
    if count == 0:
        return "none"
    return "raw" if count == archive.end_seq - archive.start_seq + 1 else "partial"


class ContextService:
    def __init__(
        self, db: AsyncSession, principal: Principal, counter: TokenCounter = count_tokens
    ) -> None:
        self.agent_sessions = AgentSessionService(db, principal)
        self.archives = ArchiveService(db, principal)
        self.counter = counter

    async def assemble(self, agent_session_id: uuid.UUID, budget: Budget) -> ContextRead:
        agent_session = await self.agent_sessions.get(agent_session_id)
        index, _ = await self.archives.page(
            agent_session_id, before_seq=None, limit=ARCHIVE_INDEX_LIMIT
        )
        working_memory = await self._working_memory(agent_session, index)
        floor_seq = working_memory.covered_end_seq if working_memory is not None else 0
        window = await self._window(agent_session, floor_seq, budget.usable)
        summary_archive = (
            None
            if working_memory is None
            else ArchiveRange(working_memory.archive_seq, 1, working_memory.covered_end_seq)
        )
        ranges = [ArchiveRange(a.archive_seq, a.start_seq, a.end_seq) for a in index]
        listed = listed_archives(budget.usable)
        hint = Hint(
            system_prompt_addition(
                str(agent_session_id), summary_archive=summary_archive, index=ranges, listed=listed
            ),
            system_prompt_addition(
                str(agent_session_id),
                summary_archive=summary_archive,
                index=ranges,
                listed=listed,
                summary_sent=False,
            ),
        )
        source = None
        if working_memory is not None:
            source = (
                SummarySource(legacy_text=working_memory.markdown)
                if working_memory.is_legacy
                else SummarySource(
                    sections={Section(name): body for name, body in working_memory.sections.items()}
                )
            )
        result = assemble(budget, window, source=source, hint=hint, counter=self.counter)
        return self._read(agent_session, budget, index, working_memory, window, result)

    async def _working_memory(
        self, agent_session: AgentSession, index: Sequence[Archive]
    ) -> WorkingMemoryRead | None:
        """The newest done archive's WM: found in the index, or by one indexed lookup beyond it."""
        done = next((archive for archive in index if archive.status == "done"), None)
        if done is not None:
            return await self.archives.working_memory_of(done)
        if agent_session.archive_count > len(index):
            return await self.archives.working_memory(agent_session.agent_session_id)
        return None

    async def _window(self, agent_session: AgentSession, floor_seq: int, usable: int) -> Window:
        """The newest messages after ``floor_seq``, read newest first, until they hold more tokens
        than the whole usable budget and include a user message (older ones cannot be sent)."""
        chunks: list[list[Candidate]] = []
        upto = agent_session.last_seq
        size = FIRST_READ_MESSAGES
        tokens = 0
        seen_user = False
        while upto > floor_seq and not (tokens > usable and seen_user):
            after = max(floor_seq, upto - size)
            # seq is gap-free, so the range (after, upto] holds exactly upto - after messages.
            _, rows = await self.agent_sessions.read_messages(
                agent_session.agent_session_id,
                after_seq=after,
                limit=upto - after,
                upto_seq=upto,
            )
            chunk = [Candidate(row.seq, row.message, row.token_count) for row in rows]
            chunks.append(chunk)
            tokens += sum(candidate.tokens for candidate in chunk)
            seen_user = seen_user or any(candidate.role == "user" for candidate in chunk)
            upto = after
            size *= 2
        candidates = [candidate for chunk in reversed(chunks) for candidate in chunk]
        return Window(candidates, floor_seq, agent_session.last_seq)

    def _read(
        self,
        agent_session: AgentSession,
        budget: Budget,
        index: Sequence[Archive],
        working_memory: WorkingMemoryRead | None,
        window: Window,
        result: Assembly,
    ) -> ContextRead:
        included = result.included_seqs
        floor_seq = window.floor_seq
        newest = index[0] if index else None
        tail = None
        if newest is not None and newest.tail_start_seq is not None and newest.tail_end_seq:
            tail = PreservedTail(
                archive_seq=newest.archive_seq,
                start_seq=newest.tail_start_seq,
                end_seq=newest.tail_end_seq,
                message_count=newest.tail_message_count,
                tokens=newest.tail_tokens,
                keep_recent_count=newest.keep_recent_count,
                in_context=bisect_right(included, newest.tail_end_seq)
                - bisect_left(included, newest.tail_start_seq),
            )
        summary = result.summary
        return ContextRead(
            agent_session_id=agent_session.agent_session_id,
            system_prompt_addition=result.system_prompt_addition,
            messages=result.messages,
            working_memory=None
            if working_memory is None
            else ContextWorkingMemory(
                archive_seq=working_memory.archive_seq,
                covered_start_seq=working_memory.covered_start_seq,
                covered_end_seq=working_memory.covered_end_seq,
                sections=working_memory.sections,
                tokens=working_memory.tokens,
                is_legacy=working_memory.is_legacy,
                generator=working_memory.generator,
            ),
            preserved_tail=tail,
            archive_index=[
                ArchiveIndexEntry(
                    archive_seq=archive.archive_seq,
                    start_seq=archive.start_seq,
                    end_seq=archive.end_seq,
                    status=archive.status,
                    abstract=archive.abstract,
                    in_context=_in_context(archive, floor_seq, included),
                )
                for archive in index
            ],
            archive_count=agent_session.archive_count,
            tokens=ContextTokens(
                budget=budget.budget,
                reserved=budget.reserved,
                usable=budget.usable,
                wm_layer=result.wm_layer,
                system_prompt_addition=result.hint_tokens,
                wm=result.wm_tokens,
                messages=result.message_tokens,
                total=result.total,
                history_total=agent_session.total_tokens,
                over_budget=result.over_budget,
            ),
            stats=ContextStats(
                messages_unsummarised=agent_session.last_seq - floor_seq,
                messages_included=len(included),
                messages_omitted=sum(end - start + 1 for start, end in result.omitted),
                omitted_ranges=[SeqRange(start_seq=s, end_seq=e) for s, e in result.omitted],
                dropped=[
                    DroppedMessage(seq=item.seq, reason=item.reason.value)
                    for item in result.dropped
                ],
                sanitised_messages=result.sanitised,
                newest_user_seq=result.newest_user_seq,
                wm_cuts=[
                    WmCutRead(
                        kind=cut.kind.value,
                        section=None if cut.section is None else cut.section.value,
                        removed=cut.removed,
                    )
                    for cut in (summary.cuts if summary is not None else ())
                ],
                summary_omitted=summary is not None and summary.text is None,
                hint_omitted=result.hint_omitted,
            ),
        )
