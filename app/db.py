"""Database plumbing: declarative base, engine, and the transactions the application runs in.

Owns the unit of work, the per-transaction tenant + role setup that row-level security relies
on, and the bounds on every connection (how long getting one may take, Postgres's own statement
timeout, TCP keepalives). Never contains feature SQL. Driver errors are translated into
application errors by ``app.db_errors``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, cast

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout
from sqlalchemy import DateTime, MetaData, event, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase, ORMExecuteState, Session

from app.config import Settings
from app.db_errors import _TRANSLATED, translate

logger = logging.getLogger(__name__)

APP_ROLE = "workmem_app"
"""The service's login role: no superuser, no BYPASSRLS (created by the first revisions)."""

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


@dataclass(frozen=True, slots=True)
class Bounds:
    """How long database work may take, on both sides of the connection.

    ``connect_s`` bounds getting a connection (a pool checkout, or a new connection when the
    server no longer accepts any); ``statement_s`` is Postgres's ``statement_timeout`` (None:
    unbounded, for operator commands such as an import); ``keepalive_s`` the TCP keepalive idle
    time, so a peer that vanished is noticed on an idle pooled connection.
    """

    connect_s: float = 1.0
    statement_s: float | None = 10.0
    keepalive_s: int = 10

    @classmethod
    def from_settings(cls, settings: Settings) -> Bounds:
        return cls(
            connect_s=settings.db_connect_timeout_s,
            statement_s=settings.db_statement_timeout_s,
            keepalive_s=settings.db_keepalive_s,
        )

    def server_options(self) -> str:
        """Session settings sent with every new connection."""
        # Timestamps come back in UTC whatever the server's default, so a value the service
        # computes (an append's created_at) reads the same as the stored one.
        options = ["-c TimeZone=UTC"]
        if self.statement_s is not None:
            statement_ms = max(1, round(self.statement_s * 1000))
            # A transaction left open by a frozen process would hold its row locks forever.
            idle_ms = max(60_000, 6 * statement_ms)
            options += [
                f"-c statement_timeout={statement_ms}",
                f"-c idle_in_transaction_session_timeout={idle_ms}",
            ]
        return " ".join(options)

    def connect_args(self) -> dict[str, Any]:
        """libpq parameters of every connection (ignored on a Unix socket where they do not
        apply). libpq's own connect timeout is at least 2 s; ``connect_s`` bounds it sooner."""
        return {
            "options": self.server_options(),
            "connect_timeout": max(2, int(self.connect_s + 1)),
            "keepalives": 1,
            "keepalives_idle": self.keepalive_s,
            "keepalives_interval": max(1, self.keepalive_s // 2),
            "keepalives_count": 3,
        }


def create_engine(url: str, *, pool_size: int = 10, bounds: Bounds | None = None) -> AsyncEngine:
    bounds = bounds or Bounds()
    return create_async_engine(
        normalize_url(url),
        pool_size=pool_size,
        max_overflow=pool_size,
        # No pre-ping round trip per checkout: a connection broken by a database restart is
        # detected on use, the pool is invalidated, the request answers 503 and the next succeeds.
        pool_timeout=bounds.connect_s,
        pool_recycle=1800,
        connect_args=bounds.connect_args(),
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


# set_config(..., true) is SET LOCAL: the setting ends with the transaction, so a pooled
# connection never carries one tenant into the next request. The login role itself is the
# application's (never a superuser, never BYPASSRLS): no role is switched per request. What is
# set is a tenant *token*, signed by the database (docs/operations.md, "Tenant tokens"): row-level
# security reads the tenant from it, and no SQL of this login can forge one.
_ENTER_TENANT = "SELECT set_config('app.tenant_token', %(token)s, true)"
_SIGN_AND_ENTER = """
SELECT set_config('app.tenant_token',
                  coalesce(workmem_tenant_token(%(tenant_id)s, %(service_key)s), ''), true)
"""
_SET_SERVICE_KEY = "SELECT set_config('app.service_key', %(service_key)s, true)"
_AS_TENANT = """
SELECT set_config('app.tenant_token', coalesce(workmem_tenant_token(:tenant_id), ''), true)
"""

SERVICE_KEY_VARIABLE = "WORKMEM_SERVICE_KEY"
_RENEW_S = 120
"""A token is renewed when it has less than this left (the database gives 15 minutes)."""


def token_expiry(token: str) -> float:
    """The expiry written in a token (``<tenant>.<expiry>.<mac>``); 0 when unreadable."""
    parts = token.split(".")
    return float(parts[1]) if len(parts) == 3 and parts[1].isdigit() else 0.0


@dataclass(slots=True)
class TenantTokens:
    """The tenant tokens this process holds, by tenant (from authentication or the service
    key). Tokens are tenant ids with the database's MAC: holding one for a tenant grants that
    tenant only, and the process already acts for it."""

    _tokens: dict[uuid.UUID, str] = field(default_factory=dict)

    def get(self, tenant_id: uuid.UUID) -> str | None:
        token = self._tokens.get(tenant_id)
        if token is None or token_expiry(token) - time.time() < _RENEW_S:
            return None
        return token

    def put(self, tenant_id: uuid.UUID, token: str | None) -> None:
        if token:
            if len(self._tokens) > 100_000:
                self._tokens.clear()
            self._tokens[tenant_id] = token


TENANT_TOKENS = TenantTokens()
"""One per process: an append on the autocommit pool finds the token its request was given."""


def token_for(tenant_id: uuid.UUID) -> str:
    """The held token of ``tenant_id``, or "" (which sees nothing)."""
    return TENANT_TOKENS.get(tenant_id) or ""


async def as_tenant(db: AsyncSession, tenant_id: uuid.UUID) -> None:
    """Enter ``tenant_id`` inside a service transaction (``Database.unscoped`` with the service
    key): the database signs the token itself."""
    await db.execute(text(_AS_TENANT), {"tenant_id": tenant_id})


_PRIVILEGED_LOGIN = """
SELECT rolname, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user
"""


_HAS_KEYRING = "SELECT to_regprocedure('public.workmem_is_service(text)') IS NOT NULL"

ConnectHook = Callable[[psycopg.AsyncConnection[Any]], None]


class PrivilegedLogin(RuntimeError):
    """The configured login would not be subject to row-level security."""


async def driver(db: AsyncSession) -> psycopg.AsyncConnection[Any]:
    """The psycopg connection under ``db``'s transaction (the per-request tenant setup)."""
    connection = await db.connection()
    raw = await connection.get_raw_connection()
    return cast("psycopg.AsyncConnection[Any]", raw.driver_connection)


def login_url(url: str, role: str = APP_ROLE) -> str:
    """The same server and database, logging in as ``role`` (for clusters that trust local
    logins, such as the embedded one; elsewhere the operator gives the URL with its password)."""
    return (
        make_url(normalize_url(url))
        .set(username=role, password=None)
        .render_as_string(hide_password=False)
    )


def libpq_url(url: str) -> str:
    """The URL as psycopg itself takes it (without SQLAlchemy's driver suffix)."""
    return normalize_url(url).replace("postgresql+psycopg://", "postgresql://", 1)


@dataclass(frozen=True, slots=True)
class Database:
    """The service's connections to Postgres, all as its own login role.

    ``sessions`` (SQLAlchemy) serves the transactions of requests and jobs; ``pool`` (psycopg,
    autocommit) serves the statements that are a whole transaction by themselves, such as an
    append: one round trip, no ``BEGIN``/``COMMIT`` of their own (``docs/database.md``).
    """

    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    pool: AsyncConnectionPool
    conninfo: str
    on_connect: ConnectHook | None = None
    bounds: Bounds = Bounds()
    service_key: str | None = None

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        pool_size: int = 10,
        on_connect: ConnectHook | None = None,
        bounds: Bounds | None = None,
        service_key: str | None = None,
    ) -> Database:
        """``on_connect`` runs on every new connection of all three kinds (instrumentation).
        ``service_key`` (default: ``WORKMEM_SERVICE_KEY``) is what work across tenants takes:
        workers, maintenance, operator commands (docs/operations.md)."""
        bounds = bounds or Bounds()
        engine = create_engine(url, pool_size=pool_size, bounds=bounds)
        if on_connect is not None:
            hook = on_connect

            @event.listens_for(engine.sync_engine, "connect")
            def _connected(dbapi_connection: Any, _record: Any) -> None:
                hook(dbapi_connection.driver_connection)

        async def configure(connection: psycopg.AsyncConnection[Any]) -> None:
            if on_connect is not None:
                on_connect(connection)

        conninfo = libpq_url(url)
        pool = AsyncConnectionPool(
            conninfo,
            min_size=1,
            max_size=pool_size,
            open=False,
            timeout=bounds.connect_s,
            kwargs={"autocommit": True, **bounds.connect_args()},
            configure=configure,
        )
        return cls(
            engine,
            async_sessionmaker(engine, expire_on_commit=False, sync_session_class=UnitOfWork),
            pool,
            conninfo,
            on_connect,
            bounds,
            service_key or os.environ.get(SERVICE_KEY_VARIABLE) or None,
        )

    async def _begin(self, db: AsyncSession) -> None:
        """Check out the transaction's connection within ``bounds.connect_s``: a server that
        no longer accepts connections (or a pool with none free) answers 503 promptly."""
        async with asyncio.timeout(self.bounds.connect_s):
            await db.connection()

    @asynccontextmanager
    async def tenant(self, tenant_id: uuid.UUID) -> AsyncIterator[AsyncSession]:
        """One transaction under ``tenant_id``'s token: row-level security applies to all SQL.

        The token is the one authentication gave, or one the database signs for the service
        key; without either the transaction sees no row."""
        try:
            async with self.sessions.begin() as db:
                await self._begin(db)
                connection = await driver(db)
                token = TENANT_TOKENS.get(tenant_id)
                if token is not None:
                    await connection.execute(_ENTER_TENANT, {"token": token})
                else:
                    minted = await connection.execute(
                        _SIGN_AND_ENTER,
                        {"tenant_id": str(tenant_id), "service_key": self.service_key or ""},
                    )
                    row = await minted.fetchone()
                    TENANT_TOKENS.put(tenant_id, row[0] if row else None)
                yield db
        except _TRANSLATED as error:
            raise translate(error) from error

    @asynccontextmanager
    async def unscoped(self) -> AsyncIterator[AsyncSession]:
        """A transaction with no tenant: every tenant table shows no row in it.

        It carries the service key when the process has one (``app.service_key``, local to the
        transaction), which the privileged functions of ``docs/operations.md`` that act across
        tenants require (the operator's tenants and keys, the archive claim, re-queueing, the
        tenant list of maintenance jobs); authentication and readiness need none.
        """
        try:
            async with self.sessions.begin() as db:
                await self._begin(db)
                if self.service_key:
                    await (await driver(db)).execute(
                        _SET_SERVICE_KEY, {"service_key": self.service_key}
                    )
                yield db
        except _TRANSLATED as error:
            raise translate(error) from error

    async def ensure_token(self, tenant_id: uuid.UUID) -> None:
        """Hold a token for ``tenant_id`` (for the append path, whose statements carry it)."""
        if TENANT_TOKENS.get(tenant_id) is None:
            async with self.tenant(tenant_id):
                pass

    async def open(self) -> None:
        """Start the autocommit pool (the engine connects on first use by itself)."""
        if self.pool.closed:
            await self.pool.open(wait=False)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled autocommit connection: each statement on it is its own transaction."""
        await self.open()
        try:
            async with self.pool.connection(timeout=self.bounds.connect_s) as connection:
                yield connection
        except (PoolTimeout, psycopg.OperationalError) as error:
            raise translate(error) from error

    @asynccontextmanager
    async def dedicated(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A connection of its own, outside both pools, for session state that must live as
        long as it does (an advisory lock)."""
        try:
            async with asyncio.timeout(self.bounds.connect_s):
                connection = await psycopg.AsyncConnection.connect(
                    self.conninfo, autocommit=True, **self.bounds.connect_args()
                )
        except (psycopg.OperationalError, TimeoutError) as error:
            raise translate(error) from error
        if self.on_connect is not None:
            self.on_connect(connection)
        async with connection:
            yield connection

    async def check_login(self) -> None:
        """Refuse a login that row-level security would not restrict; warn when the process
        has no valid service key (its work across tenants would be refused)."""
        async with self.unscoped() as db:
            name, superuser, bypass = (await db.execute(text(_PRIVILEGED_LOGIN))).one()
            # Before the tenant-token revision (the schema not migrated yet) there is no key.
            service = None
            if await db.scalar(text(_HAS_KEYRING)):
                service = await db.scalar(text("SELECT workmem_is_service()"))
        if superuser or bypass:
            raise PrivilegedLogin(
                f"the database login {name!r} is a superuser or bypasses row-level security; "
                "the service must log in as workmem_app (see docs/operations.md)"
            )
        if service is False:
            logger.warning(
                "no valid service key (%s): archive jobs, webhook deliveries and maintenance "
                "will do nothing; see docs/operations.md, Tenant tokens",
                SERVICE_KEY_VARIABLE,
            )

    async def dispose(self) -> None:
        await self.pool.close()
        await self.engine.dispose()
