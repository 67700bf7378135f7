"""``AsyncWorkmemClient``: the typed client for asyncio code (agent frameworks, servers).

The same routes, arguments and results as ``WorkmemClient``, awaited; owns one
``httpx.AsyncClient``. Never blocks the event loop: waits between repeats are ``asyncio.sleep``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx

from workmem_client import calls, lifecycle_calls
from workmem_client.call import Call
from workmem_client.chat import chat_messages
from workmem_client.config import resolve
from workmem_client.errors import ConflictError, archive_missing, connection_error
from workmem_client.models import AgentSessionRead, ArchiveRead
from workmem_client.retry import RetryPolicy
from workmem_client.sending import FINISHED, answer, auth_headers, request_of

P = ParamSpec("P")
T = TypeVar("T")


def _sent(
    build: Callable[P, Call[T]],
) -> Callable[Concatenate[AsyncWorkmemClient, P], Coroutine[Any, Any, T]]:
    async def method(self: AsyncWorkmemClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.send(build(*args, **kwargs))

    method.__name__ = build.__name__
    method.__doc__ = build.__doc__
    return method


class AsyncWorkmemClient:
    """``AsyncWorkmemClient(base_url, api_key)``; both default to ``WORKMEM_URL`` and
    ``WORKMEM_API_KEY``. ``transport`` takes any httpx transport, such as
    ``httpx.ASGITransport(app)`` for an app in the same process."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        url, key = resolve(base_url, api_key)
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._http = httpx.AsyncClient(
            base_url=url, headers=auth_headers(key), timeout=timeout_s, transport=transport
        )

    async def send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            try:
                response = await self._http.request(**request_of(call))
            except httpx.TransportError as error:
                raise connection_error(error) from error
            result, delay = answer(call, response, self.retry, attempt)
            if delay is None:
                return result  # type: ignore[return-value]
            await self._sleep(delay)
            attempt += 1

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncWorkmemClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    create_session = _sent(calls.create_session)
    get_session = _sent(calls.get_session)
    list_sessions = _sent(calls.list_sessions)
    delete_session = _sent(calls.delete_session)
    append = _sent(calls.append)
    append_batch = _sent(calls.append_batch)
    messages = _sent(calls.messages)
    retract = _sent(calls.retract)
    redact = _sent(lifecycle_calls.redact)
    erase_user = _sent(lifecycle_calls.erase_user)
    receipt_public_key = _sent(lifecycle_calls.receipt_public_key)
    commit = _sent(calls.commit)
    archives = _sent(calls.archives)
    archive = _sent(calls.archive)
    retry_archive = _sent(calls.retry_archive)
    clear_archive = _sent(calls.clear_archive)
    set_memory_policy = _sent(calls.set_memory_policy)
    set_record_contexts = _sent(calls.set_record_contexts)
    user_memory_policy = _sent(calls.user_memory_policy)
    set_user_memory_policy = _sent(calls.set_user_memory_policy)
    working_memory = _sent(calls.working_memory)
    working_memory_history = _sent(calls.working_memory_history)
    restore_working_memory = _sent(calls.restore_working_memory)
    fork = _sent(calls.fork)
    context = _sent(calls.context)
    compact = _sent(calls.compact)
    contexts = _sent(calls.contexts)
    recorded_context = _sent(calls.recorded_context)
    search_memories = _sent(calls.search_memories)
    search_history = _sent(calls.search_history)
    pins = _sent(calls.pins)
    pin = _sent(calls.pin)
    unpin = _sent(calls.unpin)
    create_webhook = _sent(calls.create_webhook)
    list_webhooks = _sent(calls.list_webhooks)
    delete_webhook = _sent(calls.delete_webhook)
    webhook_deliveries = _sent(calls.webhook_deliveries)
    retention = _sent(calls.retention)
    set_retention = _sent(calls.set_retention)
    model_usage = _sent(calls.model_usage)

    async def chat_messages(
        self,
        agent_session_id: uuid.UUID | str,
        *,
        system_prompt: str | None = None,
        token_budget: int | None = None,
        reserve_tokens: int | None = None,
        recall: str | None = None,
        fill: bool | None = None,
    ) -> list[dict[str, Any]]:
        """The context as the ``messages`` list for ``chat.completions.create``, your system
        prompt first (with the context's ``system_prompt_addition``)."""
        found = await self.context(
            agent_session_id,
            token_budget=token_budget,
            reserve_tokens=reserve_tokens,
            recall=recall,
            fill=fill,
        )
        return chat_messages(found, system_prompt)

    async def find_session(self, external_id: str) -> AgentSessionRead | None:
        """The agent session with this ``external_id``, if there is one."""
        found = (await self.list_sessions(external_id=external_id, limit=1)).items
        return found[0] if found else None

    async def session_for(self, external_id: str, **create: Any) -> AgentSessionRead:
        """The agent session with this ``external_id``, created (with ``create``'s fields) when
        there is none; two callers racing get the same one."""
        found = await self.find_session(external_id)
        if found is not None:
            return found
        try:
            return await self.create_session(external_id=external_id, **create)
        except ConflictError:
            again = await self.find_session(external_id)
            if again is None:
                raise
            return again

    async def wait_for_archive(
        self,
        agent_session_id: uuid.UUID | str,
        archive_seq: int,
        *,
        timeout_s: float = 60.0,
        poll_s: float = 0.25,
    ) -> ArchiveRead:
        """Poll until the archive is ``done`` or ``failed`` (or ``timeout_s`` passed: then it
        is returned as it stands)."""
        deadline = time.monotonic() + timeout_s
        while True:
            page = await self.archives(agent_session_id, before_seq=archive_seq + 1, limit=1)
            current = page.items[0] if page.items else None
            if current is None or current.archive_seq != archive_seq:
                raise archive_missing(archive_seq)
            if current.status in FINISHED or time.monotonic() >= deadline:
                return current
            await self._sleep(poll_s)
