"""``WorkmemClient``: the typed client for code that blocks (scripts, threads, notebooks).

Owns one ``httpx.Client`` and sending ``calls`` through it with the retry policy; every route
method is the ``calls`` function of the same name, sent. Never runs an event loop.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
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


def _sent(build: Callable[P, Call[T]]) -> Callable[Concatenate[WorkmemClient, P], T]:
    def method(self: WorkmemClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.send(build(*args, **kwargs))

    method.__name__ = build.__name__
    method.__doc__ = build.__doc__
    return method


class WorkmemClient:
    """``WorkmemClient(base_url, api_key)``; both default to ``WORKMEM_URL`` and
    ``WORKMEM_API_KEY``. Errors are ``workmem_client.errors`` exceptions carrying the problem's
    ``type``; a 429 or 503 with ``Retry-After`` is repeated (``retry``), nothing else is."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        url, key = resolve(base_url, api_key)
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=url, headers=auth_headers(key), timeout=timeout_s, transport=transport
        )

    def send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            try:
                response = self._http.request(**request_of(call))
            except httpx.TransportError as error:
                raise connection_error(error) from error
            result, delay = answer(call, response, self.retry, attempt)
            if delay is None:
                return result  # type: ignore[return-value]
            self._sleep(delay)
            attempt += 1

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> WorkmemClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

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

    def chat_messages(
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
        found = self.context(
            agent_session_id,
            token_budget=token_budget,
            reserve_tokens=reserve_tokens,
            recall=recall,
            fill=fill,
        )
        return chat_messages(found, system_prompt)

    def find_session(self, external_id: str) -> AgentSessionRead | None:
        """The agent session with this ``external_id``, if there is one."""
        found = self.list_sessions(external_id=external_id, limit=1).items
        return found[0] if found else None

    def session_for(self, external_id: str, **create: Any) -> AgentSessionRead:
        """The agent session with this ``external_id``, created (with ``create``'s fields) when
        there is none; two callers racing get the same one."""
        found = self.find_session(external_id)
        if found is not None:
            return found
        try:
            return self.create_session(external_id=external_id, **create)
        except ConflictError:
            again = self.find_session(external_id)
            if again is None:
                raise
            return again

    def wait_for_archive(
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
            page = self.archives(agent_session_id, before_seq=archive_seq + 1, limit=1)
            current = page.items[0] if page.items else None
            if current is None or current.archive_seq != archive_seq:
                raise archive_missing(archive_seq)
            if current.status in FINISHED or time.monotonic() >= deadline:
                return current
            self._sleep(poll_s)
