"""Driver errors translated, once, into what they are.

``Unavailable`` (unreachable), ``DatabaseTimeout`` (a statement or a lock wait cancelled by
Postgres) or ``DatabaseConflict`` (a deadlock, a serialization failure).
"""

from __future__ import annotations

import psycopg
from psycopg_pool import PoolTimeout
from sqlalchemy import exc as sa_exc

from app.errors import DatabaseConflict, DatabaseTimeout, Unavailable


def is_unavailable(error: BaseException) -> bool:
    """True when a driver error means the database cannot be reached right now."""
    if isinstance(error, sa_exc.TimeoutError | psycopg.OperationalError):
        return True
    if isinstance(error, sa_exc.DBAPIError):
        return bool(error.connection_invalidated) or isinstance(error, sa_exc.OperationalError)
    return False


_TIMEOUT_STATES = frozenset({"57014", "55P03"})
"""query_canceled (statement_timeout) and lock_not_available (lock_timeout)."""
_CONFLICT_STATES = frozenset({"40P01", "40001"})
"""deadlock_detected and serialization_failure: transient, safe to retry."""


def sqlstate_of(error: BaseException) -> str | None:
    """The SQLSTATE of a driver error, bare or wrapped by SQLAlchemy."""
    original = getattr(error, "orig", error)
    state = getattr(original, "sqlstate", None)
    return state if isinstance(state, str) else None


def translate(error: BaseException) -> BaseException:
    """The application error a driver or pool error stands for, or ``error`` itself.

    Postgres's own cancellations are reported as what they are, before the generic
    "unreachable": psycopg files them under ``OperationalError`` too.
    """
    state = sqlstate_of(error)
    if state in _TIMEOUT_STATES:
        return DatabaseTimeout(
            "the database cancelled a statement that ran or waited too long; retry shortly"
        )
    if state in _CONFLICT_STATES:
        return DatabaseConflict(
            "a deadlock or a serialization failure with concurrent requests; nothing was "
            "written, retry"
        )
    if isinstance(error, TimeoutError):
        return Unavailable("no database connection could be had in time; retry shortly")
    if isinstance(error, PoolTimeout | psycopg.OperationalError) or is_unavailable(error):
        return Unavailable("the database is unreachable; retry shortly")
    return error


_TRANSLATED = (sa_exc.DBAPIError, sa_exc.TimeoutError, psycopg.OperationalError, TimeoutError)
