"""Bulk memory rows for search tests and benchmarks: the tenant, agent session and archive every
memory row must name as its source, made once per tenant before its memories are copied in."""

from __future__ import annotations

import uuid

import psycopg


def memory_source(connection: psycopg.Connection, name: str) -> tuple[uuid.UUID, uuid.UUID]:
    """A new tenant ``name`` with one agent session and its archive 1 (done): the source that
    bulk-copied memories cite. Returns the tenant's and the agent session's ids."""
    tenant = connection.execute(
        "INSERT INTO tenants (name) VALUES (%s) RETURNING tenant_id", (name,)
    ).fetchone()
    assert tenant is not None
    source = connection.execute(
        "INSERT INTO agent_sessions (tenant_id, last_seq) VALUES (%s, 1) RETURNING agent_session_id",
        (tenant[0],),
    ).fetchone()
    assert source is not None
    connection.execute(
        "INSERT INTO archives (tenant_id, agent_session_id, archive_seq, start_seq, end_seq,"
        " status) VALUES (%s, %s, 1, 1, 1, 'done')",
        (tenant[0], source[0]),
    )
    return tenant[0], source[0]
