"""Every request the client makes, one function each: the routes of ``docs/api.md`` as calls.

Each function takes the route's parameters (keywords, ``None`` = the server's default) and
returns a ``Call`` whose answer parses into the API's ``…Read`` model (``models``). Pure:
nothing here sends a request, so the sync and the async client share these definitions.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any, Literal
from urllib.parse import quote

from workmem_client.call import Call, body, keyed, nothing, query, reads
from workmem_client.models import (
    AgentSessionPage,
    AgentSessionRead,
    AppendResult,
    ArchiveExpanded,
    ArchivePage,
    ArchiveRead,
    BatchAppendResult,
    CategoryName,
    CommitRead,
    CompactRead,
    ContextRead,
    ContextRecordPage,
    ContextRecordRead,
    DeliveryPage,
    EventType,
    HistorySearchRead,
    MemorySearchRead,
    MessagePage,
    ModelUsageReport,
    PinList,
    PinRead,
    RetentionPolicyRead,
    RetractionRead,
    SectionHistoryPage,
    UserMemoryPolicyRead,
    WebhookCreated,
    WebhookPage,
    WorkingMemoryRead,
)

Id = uuid.UUID | str
Message = Mapping[str, Any]


def _session(agent_session_id: Id) -> str:
    return f"/v1/sessions/{agent_session_id}"


# --- agent sessions ----------------------------------------------------------------------------


def create_session(
    *,
    external_id: str | None = None,
    user_id: str | None = None,
    agent_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    keep_recent_count: int | None = None,
    memory_policy: Mapping[str, Any] | None = None,
    record_contexts: bool | None = None,
) -> Call[AgentSessionRead]:
    """Create an agent session (``external_id`` is unique in the tenant: 409 when taken);
    ``memory_policy``: ``working_memory``, ``long_term_extraction``, ``memory_types``;
    ``record_contexts``: record every context in the ledger unless a request says not to."""
    payload = body(
        external_id=external_id,
        user_id=user_id,
        agent_id=agent_id,
        metadata=None if metadata is None else dict(metadata),
        keep_recent_count=keep_recent_count,
        memory_policy=None if memory_policy is None else dict(memory_policy),
        record_contexts=record_contexts,
    )
    return Call("POST", "/v1/sessions", reads(AgentSessionRead), body=payload)


def set_memory_policy(
    agent_session_id: Id, memory_policy: Mapping[str, Any] | None
) -> Call[AgentSessionRead]:
    """Replace the agent session's own memory policy (``None`` removes it)."""
    payload = {"memory_policy": None if memory_policy is None else dict(memory_policy)}
    return Call("PATCH", _session(agent_session_id), reads(AgentSessionRead), body=payload)


def set_record_contexts(agent_session_id: Id, record_contexts: bool) -> Call[AgentSessionRead]:
    """Record every context of the agent session in the ledger unless a request says
    ``record=False`` (``False``: only the requests that ask are recorded)."""
    payload = {"record_contexts": record_contexts}
    return Call("PATCH", _session(agent_session_id), reads(AgentSessionRead), body=payload)


def user_memory_policy(user_id: str) -> Call[UserMemoryPolicyRead]:
    """A user's default memory policy (tenant admin keys; 404 while none is set)."""
    return Call("GET", _user_policy(user_id), reads(UserMemoryPolicyRead))


def set_user_memory_policy(
    user_id: str, memory_policy: Mapping[str, Any]
) -> Call[UserMemoryPolicyRead]:
    """Replace a user's default memory policy (tenant admin keys)."""
    return Call("PUT", _user_policy(user_id), reads(UserMemoryPolicyRead), body=dict(memory_policy))


def _user_policy(user_id: str) -> str:
    return f"/v1/users/{quote(user_id, safe='')}/memory-policy"


def get_session(agent_session_id: Id) -> Call[AgentSessionRead]:
    """The agent session and its counters (``pending_tokens``, ``live_message_count``, …)."""
    return Call("GET", _session(agent_session_id), reads(AgentSessionRead))


def list_sessions(
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    external_id: str | None = None,
    cursor: str | None = None,
    limit: int | None = None,
) -> Call[AgentSessionPage]:
    """Agent sessions, oldest first; pass ``next_cursor`` as ``cursor`` for the next page."""
    params = query(
        user_id=user_id, agent_id=agent_id, external_id=external_id, cursor=cursor, limit=limit
    )
    return Call("GET", "/v1/sessions", reads(AgentSessionPage), params=params)


def delete_session(agent_session_id: Id) -> Call[None]:
    """Erase the agent session: its messages, archives, section history and memories."""
    return Call("DELETE", _session(agent_session_id), nothing)


def fork(
    agent_session_id: Id, *, at_archive: int | None = None, at_seq: int | None = None
) -> Call[AgentSessionRead]:
    """A new agent session sharing this one's history up to the end of archive ``at_archive``
    (or message ``at_seq``; give exactly one), with that archive's working memory; it then lives
    its own life (``lineage`` names the fork point)."""
    return Call(
        "POST",
        f"{_session(agent_session_id)}:fork",
        reads(AgentSessionRead),
        body=body(at_archive=at_archive, at_seq=at_seq),
    )


# --- messages ----------------------------------------------------------------------------------


def append(
    agent_session_id: Id, message: Message, *, idempotency_key: str | None = None
) -> Call[AppendResult]:
    """Append one OpenAI chat message (``metadata`` and ``created_at`` may ride along). With
    ``idempotency_key``, sending it again (after a lost answer) stores nothing twice."""
    return Call(
        "POST",
        f"{_session(agent_session_id)}/messages",
        reads(AppendResult),
        body=dict(message),
        headers=keyed(idempotency_key),
    )


def append_batch(
    agent_session_id: Id, messages: Sequence[Message], *, idempotency_key: str | None = None
) -> Call[BatchAppendResult]:
    """Append up to 500 messages atomically (a tool call with its results, for instance)."""
    return Call(
        "POST",
        f"{_session(agent_session_id)}/messages:batch",
        reads(BatchAppendResult),
        body={"messages": [dict(message) for message in messages]},
        headers=keyed(idempotency_key),
    )


def messages(
    agent_session_id: Id, *, after_seq: int | None = None, limit: int | None = None
) -> Call[MessagePage]:
    """Stored messages by seq, archived ones included; ``next_after_seq`` pages."""
    return Call(
        "GET",
        f"{_session(agent_session_id)}/messages",
        reads(MessagePage),
        params=query(after_seq=after_seq, limit=limit),
    )


def retract(agent_session_id: Id, *, seq: int | None = None) -> Call[RetractionRead]:
    """Record that a live message is withdrawn (default: the newest one not withdrawn yet):
    the stored message stays, the context and the next working memory leave it out."""
    return Call(
        "POST",
        f"{_session(agent_session_id)}/messages:retract",
        reads(RetractionRead),
        body=body(seq=seq),
    )


# --- commit, archives, working memory ----------------------------------------------------------


def commit(
    agent_session_id: Id,
    *,
    keep_recent_count: int | None = None,
    retention_mode: Literal["turn_budget"] | None = None,
    keep_recent_turn_count: int | None = None,
    retained_message_token_budget: int | None = None,
    min_raw_tail_steps: int | None = None,
    wait: bool = False,
    wait_timeout_s: float | None = None,
    idempotency_key: str | None = None,
) -> Call[CommitRead]:
    """Archive the live messages but the newest ``keep_recent_count``, or, with
    ``retention_mode="turn_budget"``, but the newest ``keep_recent_turn_count`` whole turns
    within ``retained_message_token_budget`` tokens (at least ``min_raw_tail_steps`` steps of
    a turn over it); with ``wait``, answer once the working memory is written (``status``
    ``done`` or ``failed``), or ``running`` when ``wait_timeout_s`` passed first."""
    payload = body(
        keep_recent_count=keep_recent_count,
        retention_mode=retention_mode,
        keep_recent_turn_count=keep_recent_turn_count,
        retained_message_token_budget=retained_message_token_budget,
        min_raw_tail_steps=min_raw_tail_steps,
        wait_timeout_s=wait_timeout_s,
    )
    payload["wait"] = wait
    return Call(
        "POST",
        f"{_session(agent_session_id)}/commit",
        reads(CommitRead),
        body=payload,
        headers=keyed(idempotency_key),
    )


def archives(
    agent_session_id: Id, *, before_seq: int | None = None, limit: int | None = None
) -> Call[ArchivePage]:
    """Archives, newest first."""
    return Call(
        "GET",
        f"{_session(agent_session_id)}/archives",
        reads(ArchivePage),
        params=query(before_seq=before_seq, limit=limit),
    )


def archive(
    agent_session_id: Id,
    archive_seq: int,
    *,
    after_seq: int | None = None,
    limit: int | None = None,
) -> Call[ArchiveExpanded]:
    """One archive expanded: its raw messages (paged), overview, abstract and decisions."""
    return Call(
        "GET",
        f"{_session(agent_session_id)}/archives/{archive_seq}",
        reads(ArchiveExpanded),
        params=query(after_seq=after_seq, limit=limit),
    )


def retry_archive(
    agent_session_id: Id, archive_seq: int, *, reason: str | None = None
) -> Call[ArchiveRead]:
    """Re-queue a failed archive (recorded with the key and ``reason`` in its ``actions``)."""
    return Call(
        "POST",
        f"{_session(agent_session_id)}/archives/{archive_seq}:retry",
        reads(ArchiveRead),
        body=body(reason=reason),
    )


def clear_archive(
    agent_session_id: Id, archive_seq: int, *, reason: str | None = None
) -> Call[ArchiveRead]:
    """Set a failed archive aside for good: it never runs again and the next archive covers its
    messages (recorded with the key and ``reason`` in its ``actions``)."""
    return Call(
        "POST",
        f"{_session(agent_session_id)}/archives/{archive_seq}:clear",
        reads(ArchiveRead),
        body=body(reason=reason),
    )


def working_memory(agent_session_id: Id) -> Call[WorkingMemoryRead]:
    """The current working memory (the empty document, ``archive_seq`` 0, before any)."""
    return Call("GET", f"{_session(agent_session_id)}/working-memory", reads(WorkingMemoryRead))


def restore_working_memory(agent_session_id: Id, archive_seq: int) -> Call[WorkingMemoryRead]:
    """Make the working memory of done archive ``archive_seq`` current again, as a new version
    (generator ``restore``); the next commit updates from it."""
    return Call(
        "POST",
        f"{_session(agent_session_id)}/working-memory:restore",
        reads(WorkingMemoryRead),
        body={"archive_seq": archive_seq},
    )


def working_memory_history(
    agent_session_id: Id,
    *,
    section: str | None = None,
    from_archive: int | None = None,
    to_archive: int | None = None,
    after_archive_seq: int | None = None,
    after_position: int | None = None,
    limit: int | None = None,
) -> Call[SectionHistoryPage]:
    """Section versions in (archive, position) order, optionally of one section."""
    params = query(
        section=section,
        from_archive=from_archive,
        to_archive=to_archive,
        after_archive_seq=after_archive_seq,
        after_position=after_position,
        limit=limit,
    )
    return Call(
        "GET",
        f"{_session(agent_session_id)}/working-memory/history",
        reads(SectionHistoryPage),
        params=params,
    )


# --- context -----------------------------------------------------------------------------------


def context(
    agent_session_id: Id,
    *,
    token_budget: int | None = None,
    reserve_tokens: int | None = None,
    recall: str | None = None,
    recall_limit: int | None = None,
    recall_min_score: float | None = None,
    fill: bool | None = None,
    record: bool | None = None,
) -> Call[ContextRead]:
    """What to send the model next: ``messages`` (summary, then raw messages) and the
    ``system_prompt_addition``, within ``token_budget`` (``fill``: the room left goes to the
    newest messages the summary covers; ``record``: keep what it was made of in the context
    ledger, named by the answer's ``context_id``)."""
    params = query(
        token_budget=token_budget,
        reserve_tokens=reserve_tokens,
        fill=fill,
        recall=recall,
        recall_limit=recall_limit,
        recall_min_score=recall_min_score,
        record=record,
    )
    return Call("GET", f"{_session(agent_session_id)}/context", reads(ContextRead), params=params)


def compact(
    agent_session_id: Id,
    *,
    token_budget: int | None = None,
    reserve_tokens: int | None = None,
    wait_timeout_s: float | None = None,
    fill: bool | None = None,
    record: bool | None = None,
) -> Call[CompactRead]:
    """Commit every live message, wait for the working memory, then the context."""
    params = query(
        token_budget=token_budget,
        reserve_tokens=reserve_tokens,
        wait_timeout_s=wait_timeout_s,
        fill=fill,
        record=record,
    )
    return Call("POST", f"{_session(agent_session_id)}/compact", reads(CompactRead), params=params)


def contexts(
    agent_session_id: Id, *, cursor: str | None = None, limit: int | None = None
) -> Call[ContextRecordPage]:
    """The agent session's recorded contexts, newest first (``next_cursor`` pages on)."""
    return Call(
        "GET",
        f"{_session(agent_session_id)}/contexts",
        reads(ContextRecordPage),
        params=query(cursor=cursor, limit=limit),
    )


def recorded_context(
    agent_session_id: Id, context_id: Id, *, render: bool | None = None
) -> Call[ContextRecordRead]:
    """One recorded context: what it was made of (``render``: its messages rebuilt from the
    rows it names, with whether they hash as recorded and what was since erased or redacted)."""
    return Call(
        "GET",
        f"{_session(agent_session_id)}/contexts/{context_id}",
        reads(ContextRecordRead),
        params=query(render=render),
    )


# --- long-term memory, history search, pins ----------------------------------------------------


def search_memories(
    q: str,
    *,
    user_id: str | None = None,
    category: CategoryName | None = None,
    limit: int | None = None,
    min_score: float | None = None,
    include_superseded: bool | None = None,
) -> Call[MemorySearchRead]:
    """Hybrid search of long-term memories (a user-bound key searches its user's only)."""
    params = query(
        q=q,
        user_id=user_id,
        category=category,
        limit=limit,
        min_score=min_score,
        include_superseded=include_superseded,
    )
    return Call("GET", "/v1/memories/search", reads(MemorySearchRead), params=params)


def search_history(
    agent_session_id: Id,
    q: str,
    *,
    limit: int | None = None,
    from_seq: int | None = None,
    to_seq: int | None = None,
) -> Call[HistorySearchRead]:
    """Full-text search over the agent session's raw messages, archived ones included, best
    first (optionally within ``from_seq``..``to_seq``)."""
    return Call(
        "GET",
        f"{_session(agent_session_id)}/history/search",
        reads(HistorySearchRead),
        params=query(q=q, limit=limit, from_seq=from_seq, to_seq=to_seq),
    )


def pins(agent_session_id: Id) -> Call[PinList]:
    """The agent session's pins in force: items its context never loses."""
    return Call("GET", f"{_session(agent_session_id)}/pins", reads(PinList))


def pin(
    agent_session_id: Id,
    *,
    text: str | None = None,
    message_seq: int | None = None,
    section: str | None = None,
) -> Call[PinRead]:
    """Pin a text, or a message (its exact text) by its seq."""
    return Call(
        "POST",
        f"{_session(agent_session_id)}/pins",
        reads(PinRead),
        body=body(text=text, message_seq=message_seq, section=section),
    )


def unpin(agent_session_id: Id, pin_id: Id) -> Call[None]:
    return Call("DELETE", f"{_session(agent_session_id)}/pins/{pin_id}", nothing)


# --- webhooks (admin keys) ---------------------------------------------------------------------


def create_webhook(
    url: str, events: Sequence[EventType], *, description: str | None = None
) -> Call[WebhookCreated]:
    """Subscribe ``url`` to ``events``; the answer carries the signing secret, shown once."""
    payload = body(url=url, events=list(events), description=description)
    return Call("POST", "/v1/webhooks", reads(WebhookCreated), body=payload)


def list_webhooks() -> Call[WebhookPage]:
    return Call("GET", "/v1/webhooks", reads(WebhookPage))


def delete_webhook(webhook_id: Id) -> Call[None]:
    """Unsubscribe: deliveries not yet made are dropped."""
    return Call("DELETE", f"/v1/webhooks/{webhook_id}", nothing)


def webhook_deliveries(
    webhook_id: Id, *, cursor: str | None = None, limit: int | None = None
) -> Call[DeliveryPage]:
    """Deliveries of a subscription, newest first, each with its attempts."""
    return Call(
        "GET",
        f"/v1/webhooks/{webhook_id}/deliveries",
        reads(DeliveryPage),
        params=query(cursor=cursor, limit=limit),
    )


def retention() -> Call[RetentionPolicyRead]:
    """The tenant's retention policy (an admin key bound to no user); every limit ``None``
    (keep everything) until one is set."""
    return Call("GET", "/v1/tenant/retention", reads(RetentionPolicyRead))


def set_retention(
    *,
    archive_messages_days: int | None = None,
    idle_session_days: int | None = None,
    memory_days: Mapping[CategoryName, int] | None = None,
) -> Call[RetentionPolicyRead]:
    """Replace the tenant's retention policy: a limit left ``None`` is off. Raw messages of
    archives older than ``archive_messages_days`` are purged (the archive and the working memory
    stay); agent sessions idle for ``idle_session_days`` are deleted; a new memory of a category
    in ``memory_days`` expires that many days after it was last stated."""
    payload = body(
        archive_messages_days=archive_messages_days,
        idle_session_days=idle_session_days,
        memory_days=dict(memory_days or {}),
    )
    return Call("PUT", "/v1/tenant/retention", reads(RetentionPolicyRead), body=payload)


# --- what the models cost (admin keys) ---------------------------------------------------------


def model_usage(
    *, since: date | str | None = None, until: date | str | None = None
) -> Call[ModelUsageReport]:
    """The tenant's model calls and tokens by UTC day and model, from ``since`` to ``until``
    (both days included; the server's defaults: the 30 days up to today)."""
    days = {"from": since, "to": until}
    return Call(
        "GET",
        "/v1/usage/models",
        reads(ModelUsageReport),
        params={name: str(day) for name, day in days.items() if day is not None},
    )
