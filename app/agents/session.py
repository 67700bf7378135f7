"""``WorkmemSession``: the OpenAI Agents SDK ``Session`` protocol on one workmem agent session.

``get_items`` returns the assembled context (the working-memory summary, then the raw tail) as
input items, so a long conversation reaches the model within a token budget; ``add_items``
appends what the run produced and commits once enough tokens are pending. Storage is
append-only, so ``pop_item`` records a retraction of the newest live message (the context and
the next working memory leave it out; the stored message stays) and ``clear_session`` erases the
agent session (messages, archives, memories); the next ``add_items`` starts a new one under the
same ``session_id``. Talks to workmem over HTTP only.
"""

from __future__ import annotations

import uuid
from typing import Any

from agents.items import TResponseInputItem
from agents.memory import SessionSettings

from app.agents.items import input_items, message_items, stored_messages
from app.client import AsyncWorkmemClient
from app.client.errors import NotFoundError

MAX_BATCH = 500
"""Messages per append (the API's default ``WORKMEM_MAX_BATCH_MESSAGES``)."""


class WorkmemSession:
    """``WorkmemSession(session_id, client)``: ``session_id`` is the agent session's
    ``external_id`` (created on the first ``add_items``).

    ``token_budget`` bounds each context (default: the API's, 128 000); the system-prompt
    addition (how to reach older details) is the first item unless ``include_hint`` is false.
    After an append, a commit runs when ``pending_tokens`` passes ``commit_threshold_tokens``
    (``None``: never), waiting for the working memory when ``commit_wait``; ``user_id``,
    ``agent_id`` and ``keep_recent_count`` apply when the agent session is created.
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        client: AsyncWorkmemClient,
        *,
        token_budget: int | None = None,
        include_hint: bool = True,
        commit_threshold_tokens: int | None = 8_000,
        commit_wait: bool = False,
        user_id: str | None = None,
        agent_id: str | None = None,
        keep_recent_count: int | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.client = client
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

    async def agent_session_id(self, *, create: bool = False) -> uuid.UUID | None:
        """The workmem agent session behind ``session_id`` (``None`` when there is none yet
        and ``create`` is false)."""
        if self._agent_session_id is None:
            found = (
                await self.client.session_for(self.session_id, **self._create)
                if create
                else await self.client.find_session(self.session_id)
            )
            self._agent_session_id = None if found is None else found.id
        return self._agent_session_id

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The context as input items, oldest first; ``limit``: only the newest ``limit``."""
        agent_session_id = await self.agent_session_id()
        if agent_session_id is None or (limit is not None and limit <= 0):
            return []
        try:
            context = await self.client.context(agent_session_id, token_budget=self.token_budget)
        except NotFoundError:
            self._agent_session_id = None
            return []
        hint = context.system_prompt_addition if self.include_hint else ""
        items = input_items(context.messages, hint)
        return items if limit is None else items[-limit:]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append the items as chat messages, atomically per batch of 500."""
        messages = stored_messages(items)
        if not messages:
            return
        agent_session_id = await self.agent_session_id(create=True)
        if agent_session_id is None:
            raise RuntimeError(f"no agent session for {self.session_id!r}")
        pending = 0
        for start in range(0, len(messages), MAX_BATCH):
            appended = await self.client.append_batch(
                agent_session_id, messages[start : start + MAX_BATCH]
            )
            pending = appended.pending_tokens
        threshold = self.commit_threshold_tokens
        if threshold is not None and pending > threshold:
            await self.commit(wait=self.commit_wait)

    async def commit(self, *, wait: bool = False) -> None:
        """Archive what is pending now (the working memory is written in the background unless
        ``wait``)."""
        agent_session_id = await self.agent_session_id()
        if agent_session_id is not None:
            await self.client.commit(agent_session_id, wait=wait)

    async def pop_item(self) -> TResponseInputItem | None:
        """Retract the newest live item and return it; ``None`` when no live message is left
        (archived messages are already in the working memory and are never retracted).

        A message that holds several items (an assistant's text with its tool calls) is
        retracted whole and the items before the returned one are appended again, so the
        context loses exactly one item.
        """
        agent_session_id = await self.agent_session_id()
        if agent_session_id is None:
            return None
        retraction = await self.client.retract(agent_session_id)
        if retraction.retracted is None:
            return None
        items = message_items(retraction.retracted.message)
        if not items:
            return None
        if len(items) > 1:
            await self.client.append_batch(agent_session_id, stored_messages(items[:-1]))
        return items[-1]

    async def clear_session(self) -> None:
        """Erase the agent session: its messages, archives, working memory and long-term
        memories. The next ``add_items`` starts a new one with the same ``session_id``."""
        agent_session_id = await self.agent_session_id()
        self._agent_session_id = None
        if agent_session_id is None:
            return
        try:
            await self.client.delete_session(agent_session_id)
        except NotFoundError:
            return
