"""An agent session's prepared generation is stored whole, replaced whole, and kept to its tenant:
another tenant neither sees it nor writes over it, and it goes with its agent session (deleted,
or erased with its user)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, ProgrammingError

from app.archives.prepared_repository import PreparedRepository, PreparedRow
from app.db import Database
from app.tenancy.principal import Scope
from tests.conftest import TenantKeys, make_tenant
from tests.support.scan import rows_holding

STATE: dict[str, Any] = {
    "working_memory": {"Session Title": "Billing rework — «phase 2»", "Key Facts": ["a", "b"]},
    "batches_done": 3,
    "carried": [{"seq": 12, "tokens": 40, "text": "line one\nline two"}, None, True, 1.5],
    "largest": 2**53,
    "empty": {},
}


def _row(agent_session_id: uuid.UUID, **changes: Any) -> PreparedRow:
    values: dict[str, Any] = {
        "agent_session_id": agent_session_id,
        "prior_archive_seq": 2,
        "first_seq": 41,
        "end_seq": 97,
        "budget": 4000,
        "fingerprint": "generator=offline;prompt=7",
        "state": STATE,
        **changes,
    }
    return PreparedRow(**values)


async def _session(client: httpx.AsyncClient, keys: TenantKeys, user_id: str = "u") -> uuid.UUID:
    response = await client.post("/v1/sessions", json={"user_id": user_id}, headers=keys.write)
    assert response.status_code == 201, response.text
    return uuid.UUID(response.json()["id"])


async def _get(database: Database, keys: TenantKeys, sid: uuid.UUID) -> PreparedRow | None:
    async with database.tenant(keys.tenant_id) as db:
        return await PreparedRepository(db, Scope(keys.tenant_id)).get(sid)


async def _put(database: Database, keys: TenantKeys, row: PreparedRow) -> None:
    async with database.tenant(keys.tenant_id) as db:
        await PreparedRepository(db, Scope(keys.tenant_id)).put(row)


async def _stored(admin_database: Database, sid: uuid.UUID) -> list[tuple[uuid.UUID, datetime]]:
    """Every tenant's rows of ``sid``, read as the schema owner: (tenant, created_at)."""
    async with admin_database.unscoped() as db:
        found = await db.execute(
            text(
                "SELECT tenant_id, created_at FROM prepared_generations"
                " WHERE agent_session_id = :sid"
            ),
            {"sid": sid},
        )
        return [(row.tenant_id, row.created_at) for row in found]


async def test_a_prepared_generation_round_trips_with_its_state(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    sid = await _session(client, tenant)
    assert await _get(database, tenant, sid) is None
    await _put(database, tenant, _row(sid))
    assert await _get(database, tenant, sid) == _row(sid)
    # Another agent session of the tenant has none.
    assert await _get(database, tenant, await _session(client, tenant)) is None


async def test_putting_again_replaces_the_row_and_its_time(
    client: httpx.AsyncClient, database: Database, admin_database: Database, tenant: TenantKeys
) -> None:
    sid = await _session(client, tenant)
    await _put(database, tenant, _row(sid))
    [(_, first_at)] = await _stored(admin_database, sid)
    later = _row(
        sid,
        prior_archive_seq=0,
        first_seq=1,
        end_seq=140,
        budget=2500,
        fingerprint="generator=openai;prompt=8",
        state={"batches_done": 5},
    )
    await _put(database, tenant, later)
    assert await _get(database, tenant, sid) == later
    [(owner, replaced_at)] = await _stored(admin_database, sid)
    assert owner == tenant.tenant_id
    assert replaced_at > first_at


async def test_drop_removes_the_row_and_dropping_nothing_is_no_error(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    kept, dropped = await _session(client, tenant), await _session(client, tenant)
    for sid in (kept, dropped):
        await _put(database, tenant, _row(sid))
    async with database.tenant(tenant.tenant_id) as db:
        prepared = PreparedRepository(db, Scope(tenant.tenant_id))
        await prepared.drop(dropped)
        await prepared.drop(dropped)
        await prepared.drop(uuid.uuid4())
    assert await _get(database, tenant, dropped) is None
    assert await _get(database, tenant, kept) == _row(kept)


async def test_another_tenant_neither_sees_nor_overwrites_the_row(
    client: httpx.AsyncClient,
    database: Database,
    admin_database: Database,
    tenant: TenantKeys,
    other_tenant: TenantKeys,
) -> None:
    sid = await _session(client, tenant)
    await _put(database, tenant, _row(sid))
    [before] = await _stored(admin_database, sid)

    assert await _get(database, other_tenant, sid) is None
    async with database.tenant(other_tenant.tenant_id) as db:
        await PreparedRepository(db, Scope(other_tenant.tenant_id)).drop(sid)
        # The filter forgotten: row-level security still shows and changes nothing.
        seen = await db.scalar(text("SELECT count(*) FROM prepared_generations"))
        changed = await db.execute(text("UPDATE prepared_generations SET budget = 1"))
        gone = await db.execute(text("DELETE FROM prepared_generations"))
    assert (seen, getattr(changed, "rowcount", None), getattr(gone, "rowcount", None)) == (0, 0, 0)
    # Its own put names its own tenant: there is no such agent session there.
    with pytest.raises(IntegrityError, match="fk_prepared_generations_tenant_id_agent_sessions"):
        await _put(database, other_tenant, _row(sid, state={"taken": True}))
    # A row naming the first tenant is refused outright.
    with pytest.raises(ProgrammingError, match="row-level security"):
        async with database.tenant(other_tenant.tenant_id) as db:
            await db.execute(
                text(
                    "INSERT INTO prepared_generations (tenant_id, agent_session_id,"
                    " prior_archive_seq, first_seq, end_seq, budget, fingerprint, state)"
                    " VALUES (:tenant_id, :sid, 0, 1, 2, 3, 'f', '{}')"
                    " ON CONFLICT (tenant_id, agent_session_id) DO UPDATE SET budget = 1"
                ),
                {"tenant_id": tenant.tenant_id, "sid": sid},
            )
    assert await _stored(admin_database, sid) == [before]
    assert await _get(database, tenant, sid) == _row(sid)


async def test_deleting_the_agent_session_deletes_its_row(
    client: httpx.AsyncClient, database: Database, admin_database: Database, tenant: TenantKeys
) -> None:
    sid = await _session(client, tenant)
    await _put(database, tenant, _row(sid))
    deleted = await client.delete(f"/v1/sessions/{sid}", headers=tenant.write)
    assert deleted.status_code == 204, deleted.text
    assert await _stored(admin_database, sid) == []


async def test_erasing_the_user_removes_their_prepared_generations(
    client: httpx.AsyncClient, database: Database, admin_database: Database
) -> None:
    keys = await make_tenant(database, "prepared-erasure")
    marker = f"zq{uuid.uuid4().hex[:12]}"
    erased = [await _session(client, keys, "erased-user") for _ in range(2)]
    neighbour = await _session(client, keys, "neighbour")
    for sid in (*erased, neighbour):
        await _put(database, keys, _row(sid, state={"quote": f"{marker} of {sid}"}))
    assert await rows_holding(admin_database, marker, tenant_id=keys.tenant_id) == {
        "prepared_generations.state": 3
    }

    answer = await client.delete("/v1/users/erased-user", headers=keys.headers(keys.admin))
    assert answer.status_code == 200, answer.text

    assert answer.json()["removed"]["prepared_generations"] == 2
    for sid in erased:
        assert await _stored(admin_database, sid) == []
    assert await rows_holding(admin_database, marker, tenant_id=keys.tenant_id) == {
        "prepared_generations.state": 1
    }
    assert await _get(database, keys, neighbour) == _row(
        neighbour, state={"quote": f"{marker} of {neighbour}"}
    )
