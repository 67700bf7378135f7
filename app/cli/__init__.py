"""The ``workmem`` command: serve, workers, migrations, tenants and keys, maintenance, import,
evaluation and debugging — one module per group of commands, on what ``base`` shares.

Holds no feature logic: every command calls a service inside a transaction it opens.
"""

from __future__ import annotations

import sys

from app.cli import (  # noqa: F401 - each module registers its commands on ``cli``
    bundles,
    database,
    debugging,
    importing,
    lifecycle,
    mcp,
    memories,
    operators,
    replay,
    retention,
    serving,
)
from app.cli.base import CliError, cli
from app.db import PrivilegedLogin
from app.embedded import DataDirectoryTooOld

__all__ = ["cli", "main"]


def main() -> None:
    import typer
    from sqlalchemy import exc as sa_exc

    from app.errors import AppError

    try:
        # Not standalone: a usage error (a missing file, an unknown option) is one line like
        # every other error, instead of a framed block.
        code = cli(standalone_mode=False)
    except typer.Abort:
        print("workmem: aborted", file=sys.stderr)
        raise SystemExit(1) from None
    except typer.TyperException as error:
        context = getattr(error, "ctx", None)
        if not _message(error) and context is not None:
            print(context.get_help())  # `workmem` alone, or a group without its command
        else:
            print(f"workmem: {_usage_line(error)}", file=sys.stderr)
        raise SystemExit(getattr(error, "exit_code", 2)) from None
    except (CliError, PrivilegedLogin, DataDirectoryTooOld) as error:
        print(f"workmem: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    except AppError as error:
        print(f"workmem: {error.detail}", file=sys.stderr)
        raise SystemExit(1) from None
    except (sa_exc.OperationalError, sa_exc.InterfaceError, OSError) as error:
        # A database that cannot be reached (at migration time, or before the service's own
        # translation applies): one line saying so, never the driver's traceback.
        print(
            f"workmem: cannot reach the database: {_first_line(error)}; check DATABASE_URL "
            "(or WORKMEM_ADMIN_DATABASE_URL) and that Postgres is running there",
            file=sys.stderr,
        )
        raise SystemExit(1) from None
    if isinstance(code, int) and code != 0:
        raise SystemExit(code)


def _first_line(error: BaseException) -> str:
    text = str(getattr(error, "orig", None) or error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _usage_line(error: Exception) -> str:
    """A usage error (a missing argument, a file that is not there) and where to read more."""
    message = _message(error)
    context = getattr(error, "ctx", None)
    command = getattr(context, "command_path", None)
    return f"{message} (see `{command} --help`)" if command else str(message)


def _message(error: Exception) -> str:
    format_message = getattr(error, "format_message", None)
    return str(format_message() if callable(format_message) else error)
