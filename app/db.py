"""Database plumbing: declarative base, engine, and the transactions the application runs in.

Owns the unit of work and the per-transaction tenant + role setup that row-level security relies
on. Never contains feature SQL. Driver errors that mean "database unreachable" are translated here,
once, into ``Unavailable``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, cast

import psycopg
from sqlalchemy import DateTime, MetaData, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase, ORMExecuteState, Session

from app.errors import Unavailable

APP_ROLE = "workmem_app"
"""The non-superuser role of every tenant-scoped transaction (created by the first revision)."""

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: DateTime(timezone=True),
        dict[str, Any]: JSONB,
    }


def normalize_url(url: str) -> str:
    """Accept the usual spellings of a Postgres URL and pin the psycopg 3 driver."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def create_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    return create_async_engine(
        normalize_url(url),
        pool_size=pool_size,
        max_overflow=pool_size,
        # No pre-ping round trip per checkout: a connection broken by a database restart is
        # detected on use, the pool is invalidated, the request answers 503 and the next succeeds.
        pool_timeout=10,
        pool_recycle=1800,
        # Timestamps come back in UTC whatever the server's default, so a value the service
        # computes (an append's created_at) reads the same as the stored one.
        connect_args={"options": "-c TimeZone=UTC"},
    )


class UnitOfWork(Session):
    """The ORM session of one transaction, whose SELECTs always refresh the rows they load.

    The append path writes on the driver connection and repositories write with Core
    ``update()``; neither passes through the identity map, so an ORM read must never be served
    from it (``docs/database.md``).
    """


@event.listens_for(UnitOfWork, "do_orm_execute")
def _fresh_rows(state: ORMExecuteState) -> None:
    if state.is_select:
        state.update_execution_options(populate_existing=True)


def is_unavailable(error: BaseException) -> bool:
    """True when a driver error means the database cannot be reached right now."""
    if isinstance(error, sa_exc.TimeoutError | psycopg.OperationalError):
        return True
    if isinstance(error, sa_exc.DBAPIError):
        return bool(error.connection_invalidated) or isinstance(error, sa_exc.OperationalError)
    return False


# set_config(..., true) is SET LOCAL: both settings end with the transaction, so a pooled
# connection never leaks one tenant into the next request.
_SET_TENANT = (
    f"SELECT set_config('role', '{APP_ROLE}', true),"
    " set_config('app.tenant_id', %(tenant_id)s, true)"
)


async def driver(db: AsyncSession) -> psycopg.AsyncConnection[Any]:
    """The psycopg connection under ``db``'s transaction.

    Only the statements that run on every request (this setup, and the append path) use it:
    on this stack SQLAlchemy's per-statement execution costs several times the round trip itself
    (see ``bench/append.py``). Everything else goes through SQLAlchemy (``docs/database.md``).
    """
    connection = await db.connection()
    raw = await connection.get_raw_connection()
    return cast("psycopg.AsyncConnection[Any]", raw.driver_connection)


@dataclass(frozen=True, slots=True)
class Database:
    """The engine plus the two kinds of transaction the application may open."""

    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]

    @classmethod
    def from_url(cls, url: str, *, pool_size: int = 10) -> Database:
        engine = create_engine(url, pool_size=pool_size)
        return cls(
            engine,
            async_sessionmaker(engine, expire_on_commit=False, sync_session_class=UnitOfWork),
        )

    @asynccontextmanager
    async def tenant(self, tenant_id: uuid.UUID) -> AsyncIterator[AsyncSession]:
        """One transaction as ``workmem_app`` with ``app.tenant_id`` set: RLS applies to all SQL."""
        try:
            async with self.sessions.begin() as db:
                await (await driver(db)).execute(_SET_TENANT, {"tenant_id": str(tenant_id)})
                yield db
        except (sa_exc.DBAPIError, sa_exc.TimeoutError, psycopg.OperationalError) as error:
            if is_unavailable(error):
                raise Unavailable("the database is unreachable; retry shortly") from error
            raise

    @asynccontextmanager
    async def system(self) -> AsyncIterator[AsyncSession]:
        """A transaction as the schema owner, which row-level security does not restrict.

        Only the named cross-tenant paths use it: API-key lookup at authentication, the
        operator's tenant and key management, and the archive claim of the workers.
        """
        try:
            async with self.sessions.begin() as db:
                yield db
        except (sa_exc.DBAPIError, sa_exc.TimeoutError) as error:
            if is_unavailable(error):
                raise Unavailable("the database is unreachable; retry shortly") from error
            raise

    async def dispose(self) -> None:
        await self.engine.dispose()
