"""``WorkmemSession``: the OpenAI Agents SDK ``Session`` protocol on one workmem agent session.

``add_items`` stores the items as chat messages that carry the items themselves
(``items.stored_messages``) and commits once enough tokens are pending. ``get_items`` returns
the assembled context: the system-prompt addition and the working-memory summary standing for
the archived items, then every live item exactly as it was added, within a token budget.
Storage is append-only, so ``pop_item`` records a retraction of the newest live message (the
context and the next working memory leave it out; the stored message stays) and
``clear_session`` erases the agent session (messages, archives, memories); the next
``add_items`` starts a new one under the same ``session_id``.

Every call runs the blocking, thread-safe client in a worker thread (``asyncio.to_thread``), so
one session object works from any event loop and any thread (``Runner.run_sync`` makes a loop
per call). Talks to workmem over HTTP only.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from agents.items import TResponseInputItem
from agents.memory import SessionSettings
from agents.memory.session_settings import resolve_session_limit

from workmem_client.agents.items import input_items, restored_items, stored_messages
from workmem_client.errors import NotFoundError
from workmem_client.models import ContextRead
from workmem_client.sync import WorkmemClient

MAX_BATCH = 500
"""Messages per append (the API's default ``WORKMEM_MAX_BATCH_MESSAGES``)."""
PAGE = 1000
"""Messages per read of the stored messages (the API's largest page)."""


class WorkmemSession:
    """``WorkmemSession(session_id, client)``: ``session_id`` is the agent session's
    ``external_id`` (created on the first ``add_items``); ``client`` a ``WorkmemClient`` (when
    none is given, one for ``WORKMEM_URL`` and ``WORKMEM_API_KEY``, closed by ``close()``).

    ``token_budget`` bounds each context (default: the API's, 128 000); the system-prompt
    addition (how to reach older details) is the first item unless ``include_hint`` is false.
    After an append, a commit runs when ``pending_tokens`` passes ``commit_threshold_tokens``
    (``None``: never), waiting for the working memory when ``commit_wait``; ``user_id``,
    ``agent_id`` and ``keep_recent_count`` apply when the agent session is created.
    ``session_settings.limit`` is the default ``limit`` of ``get_items``. With ``record``, every
    context ``get_items`` reads is recorded in the context ledger, and ``last_context_id`` names
    the newest one (``recorded_context`` on the client reads it, and renders it again).
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        client: WorkmemClient | None = None,
        *,
        token_budget: int | None = None,
        include_hint: bool = True,
        commit_threshold_tokens: int | None = 8_000,
        commit_wait: bool = False,
        user_id: str | None = None,
        agent_id: str | None = None,
        keep_recent_count: int | None = None,
        session_settings: SessionSettings | None = None,
        record: bool = False,
    ) -> None:
        self.session_id = session_id
        self.record = record
        self.last_context_id: uuid.UUID | None = None
        self._owns_client = client is None
        self.client = client if client is not None else WorkmemClient()
        self.token_budget = token_budget
        self.include_hint = include_hint
        self.commit_threshold_tokens = commit_threshold_tokens
        self.commit_wait = commit_wait
        self.session_settings = session_settings
        self._create: dict[str, Any] = {
            "user_id": user_id,
            "agent_id": agent_id,
            "keep_recent_count": keep_recent_count,
        }
        self._agent_session_id: uuid.UUID | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the client the session made (one given to it stays open)."""
        if self._owns_client:
            self.client.close()

    # --- the Session protocol --------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The context as items, oldest first; ``limit`` (default ``session_settings.limit``):
        only the newest ``limit``."""
        resolved = resolve_session_limit(limit, self.session_settings)
        return await asyncio.to_thread(self._get_items, resolved)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append the items, atomically per batch of 500 messages."""
        await asyncio.to_thread(self._add_items, list(items))

    async def pop_item(self) -> TResponseInputItem | None:
        """Retract the newest live item and return it as it was added; ``None`` when no live
        message is left (archived messages are in the working memory and never retracted).

        A message that holds several items (tool calls with their reasoning, say) is retracted
        whole and the items before the returned one are appended again, so the session loses
        exactly one item."""
        return await asyncio.to_thread(self._pop_item)

    async def clear_session(self) -> None:
        """Erase the agent session: its messages, archives, working memory and long-term
        memories. The next ``add_items`` starts a new one with the same ``session_id``."""
        await asyncio.to_thread(self._clear_session)

    # --- beyond the protocol ---------------------------------------------------------------

    async def agent_session_id(self, *, create: bool = False) -> uuid.UUID | None:
        """The workmem agent session behind ``session_id`` (``None`` when there is none yet
        and ``create`` is false)."""
        return await asyncio.to_thread(self._resolve, create=create)

    async def commit(self, *, wait: bool = False) -> None:
        """Archive what is pending now (the working memory is written in the background unless
        ``wait``)."""
        await asyncio.to_thread(self._commit, wait)

    # --- the blocking work, in a worker thread ---------------------------------------------

    def _resolve(self, *, create: bool = False) -> uuid.UUID | None:
        with self._lock:
            if self._agent_session_id is None:
                found = (
                    self.client.session_for(self.session_id, **self._create)
                    if create
                    else self.client.find_session(self.session_id)
                )
                self._agent_session_id = None if found is None else found.id
            return self._agent_session_id

    def _forget(self) -> None:
        with self._lock:
            self._agent_session_id = None

    def _get_items(self, limit: int | None) -> list[TResponseInputItem]:
        agent_session_id = self._resolve()
        if agent_session_id is None or limit == 0:
            return []
        try:
            context = self.client.context(
                agent_session_id, token_budget=self.token_budget, record=self.record or None
            )
            if context.context_id is not None:
                self.last_context_id = context.context_id
            live = self._live_items(agent_session_id, context)
        except NotFoundError:
            self._forget()
            return []
        raw = len(context.stats.included_seqs)
        head = context.messages[: len(context.messages) - raw]
        hint = context.system_prompt_addition if self.include_hint else ""
        items = [*input_items(head, hint), *live]
        return items if limit is None or limit < 0 else items[-limit:]

    def _live_items(
        self, agent_session_id: uuid.UUID, context: ContextRead
    ) -> list[TResponseInputItem]:
        """The items of the live messages the context holds, and of those it leaves out only
        because a chat server would refuse them as they stand (a call still awaiting its
        output), exactly as added."""
        omitted = [(r.start_seq, r.end_seq) for r in context.stats.omitted_ranges]
        seqs = set(context.stats.included_seqs) | {
            dropped.seq
            for dropped in context.stats.dropped
            if not any(start <= dropped.seq <= end for start, end in omitted)
        }
        if not seqs:
            return []
        wanted = sorted(seqs)
        stored: dict[int, tuple[Mapping[str, Any], Mapping[str, Any] | None]] = {}
        after: int | None = wanted[0] - 1
        while after is not None and after < wanted[-1]:
            page = self.client.messages(agent_session_id, after_seq=after, limit=PAGE)
            for message in page.items:
                stored[message.seq] = (message.message, message.metadata)
            after = page.next_after_seq
        items: list[TResponseInputItem] = []
        for seq in wanted:
            if seq in stored:
                items.extend(restored_items(*stored[seq]))
        return items

    def _add_items(self, items: list[TResponseInputItem]) -> None:
        messages = stored_messages(items)
        if not messages:
            return
        agent_session_id = self._resolve(create=True)
        if agent_session_id is None:
            raise RuntimeError(f"no agent session for {self.session_id!r}")
        pending = 0
        for start in range(0, len(messages), MAX_BATCH):
            appended = self.client.append_batch(
                agent_session_id, messages[start : start + MAX_BATCH]
            )
            pending = appended.pending_tokens
        threshold = self.commit_threshold_tokens
        if threshold is not None and pending > threshold:
            self.client.commit(agent_session_id, wait=self.commit_wait)

    def _commit(self, wait: bool) -> None:
        agent_session_id = self._resolve()
        if agent_session_id is not None:
            self.client.commit(agent_session_id, wait=wait)

    def _pop_item(self) -> TResponseInputItem | None:
        agent_session_id = self._resolve()
        if agent_session_id is None:
            return None
        retraction = self.client.retract(agent_session_id)
        if retraction.retracted is None:
            return None
        retracted = retraction.retracted
        items = restored_items(retracted.message, retracted.metadata)
        if not items:
            return None
        if len(items) > 1:
            self.client.append_batch(agent_session_id, stored_messages(items[:-1]))
        return items[-1]

    def _clear_session(self) -> None:
        agent_session_id = self._resolve()
        self._forget()
        if agent_session_id is None:
            return
        try:
            self.client.delete_session(agent_session_id)
        except NotFoundError:
            return
