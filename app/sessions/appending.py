"""The one way messages are appended, whichever door they come through.

``/v1``, ``/api/v1`` and the importer each translate their own format into ``MessageCreate``
and render what came back; everything between is here, in this order: the tenant's message
rate (API doors), the preparation (checks, token counts, off the event loop when large), the
idempotency key, the group commit, and the one statement that stores the messages and checks
and records the stored-bytes quota in the same step (so the bytes are counted one way, by the
database). Holds no rule of its own: each step is its module's.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app import telemetry
from app.db import Database, driver
from app.errors import NotFound
from app.limits.service import TenantLimits
from app.sessions.group_commit import GroupCommit, Keyed, Settled, append_keyed
from app.sessions.schemas import MessageCreate
from app.sessions.service import (
    AgentSessionService,
    AppendOutcome,
    Limits,
    PreparedAppend,
    append_prepared,
    prepare_append_off_loop,
)
from app.tenancy.principal import Principal, Scope


async def append_within(
    db: AsyncSession,
    scope: Scope,
    agent_session_id: uuid.UUID,
    messages: Sequence[MessageCreate],
    limits: Limits,
) -> AppendOutcome:
    """Prepare and store messages inside the caller's transaction (an import, a creation with
    its first messages): the same statement, on the transaction's connection."""
    prepared = await prepare_append_off_loop(messages, limits)
    return await _store_within(db, scope, agent_session_id, prepared)


async def _store_within(
    db: AsyncSession, scope: Scope, agent_session_id: uuid.UUID, prepared: PreparedAppend
) -> AppendOutcome:
    return await append_prepared(await driver(db), scope, agent_session_id, prepared)


@dataclass(frozen=True, slots=True)
class AppendFlow:
    """The process's append flow: built once at start, shared by every request."""

    database: Database
    limits: Limits
    rate: TenantLimits
    group_commit: GroupCommit | None = None
    moved: Callable[[uuid.UUID, Sequence[uuid.UUID]], None] | None = None
    """Told of every agent session messages were appended to (the worker prepares its next
    archive once it is idle)."""

    async def prepare(
        self, principal: Principal, messages: Sequence[MessageCreate]
    ) -> PreparedAppend:
        """The rate (nothing booked when it refuses), then the checks: nothing is stored when
        one fails."""
        self.rate.check_rate(principal.tenant_id, len(messages))
        return await prepare_append_off_loop(messages, self.limits)

    @telemetry.traced(
        "workmem.append",
        lambda self, principal, agent_session_id, messages, *_, **__: {
            **telemetry.ids(principal.tenant_id, agent_session_id),
            "workmem.messages": len(messages),
        },
    )
    async def append(
        self,
        principal: Principal,
        agent_session_id: uuid.UUID,
        messages: Sequence[MessageCreate],
        keyed: Keyed | None = None,
    ) -> Settled:
        """Append to an agent session by id: its outcome, or (with a key) its stored answer."""
        prepared = await self.prepare(principal, messages)
        settled = await self._store(principal.scope, agent_session_id, prepared, keyed)
        self._tell(principal, agent_session_id)
        return settled

    @telemetry.traced(
        "workmem.append",
        lambda self, principal, external_id, messages, **_: {
            **telemetry.ids(principal.tenant_id),
            "workmem.messages": len(messages),
        },
    )
    async def append_named(
        self,
        principal: Principal,
        external_id: str,
        messages: Sequence[MessageCreate],
        *,
        keep_recent_count: int,
    ) -> AppendOutcome:
        """Append to the agent session a client named, creating it when there is none. A new
        agent session and its first messages are one transaction, so an append refused (by a
        quota, say) leaves no empty agent session behind; appends to an existing one join the
        group commit like any other."""
        prepared = await self.prepare(principal, messages)
        async with self.database.tenant(principal.tenant_id) as db:
            found = await AgentSessionService(db, principal).find_by_external_id(external_id)
        if found is not None:
            try:
                settled = await self._store(principal.scope, found.agent_session_id, prepared, None)
            except NotFound:
                pass  # deleted in between: created again below, as for a new name
            else:
                if not isinstance(settled, AppendOutcome):  # no key: always an outcome
                    raise TypeError(f"an append without a key ended with {type(settled)}")
                self._tell(principal, found.agent_session_id)
                return settled
        async with self.database.tenant(principal.tenant_id) as db:
            service = AgentSessionService(db, principal, self.limits)
            row = await service.get_or_create(external_id, keep_recent_count=keep_recent_count)
            created = row.agent_session_id
            outcome = await _store_within(db, principal.scope, created, prepared)
        self._tell(principal, created)
        return outcome

    @telemetry.traced(
        "workmem.append", lambda self, principal, *_, **__: telemetry.ids(principal.tenant_id)
    )
    async def append_named_with_call_ids(
        self,
        principal: Principal,
        external_id: str,
        build: Callable[[set[str]], Sequence[MessageCreate]],
        *,
        keep_recent_count: int,
    ) -> AppendOutcome:
        """Append to the agent session a client named (created when there is none) the
        messages ``build`` makes from the tool-call ids the agent session already holds. The
        name's lock, the read of those ids and the append are one transaction, so two appends
        to one agent session, in any processes, never both read the ids before either stores
        its own: each builds on everything the one before it stored. What ``build`` raises
        leaves nothing stored, not even a new agent session."""
        async with self.database.tenant(principal.tenant_id) as db:
            service = AgentSessionService(db, principal, self.limits)
            await service.lock_name(external_id)
            row = await service.get_or_create(external_id, keep_recent_count=keep_recent_count)
            messages = build(await service.tool_call_ids(row.agent_session_id))
            prepared = await self.prepare(principal, messages)
            named = row.agent_session_id
            outcome = await _store_within(db, principal.scope, named, prepared)
        self._tell(principal, named)
        return outcome

    def _tell(self, principal: Principal, agent_session_id: uuid.UUID) -> None:
        if self.moved is not None:
            self.moved(principal.tenant_id, (agent_session_id,))

    async def _store(
        self,
        scope: Scope,
        agent_session_id: uuid.UUID,
        prepared: PreparedAppend,
        keyed: Keyed | None,
    ) -> Settled:
        if self.group_commit is not None:
            return await self.group_commit.append(scope, agent_session_id, prepared, keyed)
        if keyed is not None:
            return await append_keyed(self.database, scope, agent_session_id, prepared, keyed)
        # One statement, a transaction of its own on an autocommit connection.
        await self.database.ensure_token(scope.tenant_id)
        async with self.database.connection() as connection:
            return await append_prepared(connection, scope, agent_session_id, prepared)
