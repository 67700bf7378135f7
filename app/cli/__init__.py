"""The ``workmem`` command: serve, workers, migrations, tenants and keys, maintenance, import,
evaluation and debugging — one module per group of commands, on what ``base`` shares.

Holds no feature logic: every command calls a service inside a transaction it opens.
"""

from __future__ import annotations

import sys

from app.cli import (  # noqa: F401 - each module registers its commands on ``cli``
    database,
    debugging,
    importing,
    mcp,
    memories,
    operators,
    replay,
    serving,
)
from app.cli.base import CliError, cli
from app.db import PrivilegedLogin

__all__ = ["cli", "main"]


def main() -> None:
    from sqlalchemy import exc as sa_exc

    from app.errors import AppError

    try:
        cli()
    except (CliError, PrivilegedLogin) as error:
        print(f"workmem: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    except AppError as error:
        print(f"workmem: {error.detail}", file=sys.stderr)
        raise SystemExit(1) from None
    except (sa_exc.OperationalError, sa_exc.InterfaceError, OSError) as error:
        # A database that cannot be reached (at migration time, or before the service's own
        # translation applies): one line saying so, never the driver's traceback.
        print(f"workmem: cannot reach the database: {_first_line(error)}", file=sys.stderr)
        raise SystemExit(1) from None


def _first_line(error: BaseException) -> str:
    text = str(getattr(error, "orig", None) or error).strip()
    return text.splitlines()[0] if text else type(error).__name__
