"""Carry an embedded data directory made by an older PostgreSQL major version across to the
bundled one (``workmem db upgrade-cluster``).

PostgreSQL refuses to open a data directory of another major version. Earlier releases of
workmem embedded PostgreSQL 16 (the ``pgserver`` package); this starts that cluster with its own
binaries (``pip install 'workmem[pg16]'``), counts every table's rows, dumps the roles and every
database with the bundled (newer) ``pg_dump``, stops it, restores into a new cluster made by the
bundled PostgreSQL beside it, checks that every table has the same rows, and only then swaps
the directories: the old one is kept, renamed, until its owner removes it. A failure at any step
stops what was started and removes the half-made new cluster; the old directory is never
changed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from app.embedded import (
    POSTMASTER_PID,
    bin_dir,
    bundled_major,
    data_major,
    is_postmaster_of,
    postgres_server,
)

OLD_EXTRA = "pip install 'workmem[pg16]'"
STEPS = 6
Say = Callable[[str], None]


class UpgradeError(Exception):
    """Why the upgrade stopped; the old data directory is as it was."""


@dataclass(frozen=True, slots=True)
class OldBinaries:
    bin_dir: Path
    system_user: str | None
    """The user the old package ran Postgres as when started by root (it owns the files)."""


def old_binaries(major: int) -> OldBinaries:
    """The binaries of PostgreSQL ``major`` that the old embedded default shipped."""
    if major != 16:
        raise UpgradeError(
            f"no embedded binaries of PostgreSQL {major} are known: dump the cluster with that "
            "version's pg_dumpall and restore it into the new one"
        )
    try:
        with warnings.catch_warnings():
            # Its runtime directory falls back to /tmp when XDG_RUNTIME_DIR is unset: fine.
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
            from pgserver import _commands
    except ImportError:
        raise UpgradeError(
            "reading the PostgreSQL 16 data directory needs its binaries: "
            f"{OLD_EXTRA}, then run the upgrade again"
        ) from None
    user = "pgserver" if os.geteuid() == 0 else None
    return OldBinaries(Path(_commands.POSTGRES_BIN_PATH), user)


def backup_path(data_dir: Path, major: int) -> Path:
    """Where the old directory is kept: ``pgdata.pg16`` (``.pg16.2`` … if taken)."""
    candidate = data_dir.with_name(f"{data_dir.name}.pg{major}")
    number = 1
    while candidate.exists():
        number += 1
        candidate = data_dir.with_name(f"{data_dir.name}.pg{major}.{number}")
    return candidate


def upgrade_cluster(data_dir: Path, say: Say) -> Path | None:
    """Upgrade ``data_dir`` in place; returns where the old directory is kept, or None when
    there was nothing to do."""
    data_dir = data_dir.expanduser().resolve()
    found = data_major(data_dir)
    target = bundled_major()
    if found is None:
        raise UpgradeError(f"no PostgreSQL data directory at {data_dir}: nothing to upgrade")
    if found == target:
        say(f"{data_dir} is already PostgreSQL {target}: nothing to do")
        return None
    if found > target:
        raise UpgradeError(
            f"{data_dir} was made by PostgreSQL {found}, newer than the embedded {target}"
        )
    old = old_binaries(found)
    pid = _pid(data_dir)
    if pid is not None and is_postmaster_of(pid, data_dir):
        raise UpgradeError(
            f"a PostgreSQL server (pid {pid}) is running on {data_dir}: stop workmem first"
        )
    fresh = data_dir.with_name(f"{data_dir.name}.upgrading")
    if fresh.exists():
        shutil.rmtree(fresh)  # a failed earlier attempt's half-made cluster
    with tempfile.TemporaryDirectory(prefix="workmem-upgrade-") as work_dir:
        work = Path(work_dir)
        work.chmod(0o777)  # the old server's user makes its socket here
        counts = _dump(data_dir, old, work, found, target, say)
        say(f"[4/{STEPS}] creating the PostgreSQL {target} cluster in {fresh}")
        fresh.mkdir()
        server: Any = None
        try:
            server = postgres_server(fresh, cleanup_mode="stop")
            _restore(server, work, counts, target, say)
        except BaseException:
            if server is not None:
                server.cleanup()
            shutil.rmtree(fresh, ignore_errors=True)
            raise
        server.cleanup()
    kept = backup_path(data_dir, found)
    say(f"[6/{STEPS}] swapping the directories: the PostgreSQL {found} one is kept at {kept}")
    data_dir.rename(kept)
    fresh.rename(data_dir)
    return kept


def _pid(data_dir: Path) -> int | None:
    try:
        return int((data_dir / POSTMASTER_PID).read_text().splitlines()[0])
    except (OSError, IndexError, ValueError):
        return None


def _run(arguments: list[str], **kwargs: Any) -> str:
    """Run a binary; its own error message (the last line of its stderr) on failure. Output goes
    through files, not pipes: a server ``pg_ctl start`` leaves running would hold a pipe open."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        done = subprocess.run(arguments, stdout=out, stderr=err, text=True, check=False, **kwargs)  # noqa: S603
        out.seek(0)
        err.seek(0)
        output, errors = out.read(), err.read()
    if done.returncode != 0:
        lines = (errors or output).strip().splitlines()
        raise UpgradeError(f"{Path(arguments[0]).name} failed: {lines[-1] if lines else '?'}")
    return output


def _dump(
    data_dir: Path, old: OldBinaries, work: Path, found: int, target: int, say: Say
) -> dict[str, dict[str, int]]:
    """Start the old cluster, count its rows, dump it with the new binaries, stop it."""
    say(f"[1/{STEPS}] starting the PostgreSQL {found} cluster in {data_dir}")
    pg_ctl = str(old.bin_dir / "pg_ctl")
    _run(
        [pg_ctl, "-D", str(data_dir), "-w", "-o", '-h ""', "-o", f"-k {work}", "-l",
         str(data_dir / "log"), "start"],
        user=old.system_user,
    )  # fmt: skip
    try:
        url = f"postgresql://postgres@/postgres?host={work}"
        with psycopg.connect(url, autocommit=True) as connection:
            databases = [
                row[0]
                for row in connection.execute(
                    "SELECT datname FROM pg_database"
                    " WHERE datallowconn AND NOT datistemplate AND datname <> 'postgres'"
                    " ORDER BY datname"
                ).fetchall()
            ]
        counts = {name: _row_counts(url.replace("/postgres?", f"/{name}?")) for name in databases}
        rows = sum(sum(tables.values()) for tables in counts.values())
        say(
            f"[2/{STEPS}] dumping roles and {len(databases)} database(s) "
            f"({', '.join(databases) or 'none'}; {rows} rows) with PostgreSQL {target}'s pg_dump"
        )
        tools = bin_dir()
        globals_sql = _run(
            [str(tools / "pg_dumpall"), "--globals-only", "-h", str(work), "-U", "postgres"]
        )
        # The superuser exists in every cluster: creating it again would fail the restore.
        kept = [line for line in globals_sql.splitlines() if line != "CREATE ROLE postgres;"]
        (work / "globals.sql").write_text("\n".join(kept) + "\n")
        for name in databases:
            _run(
                [str(tools / "pg_dump"), "--format=custom", "-f", str(work / f"{name}.dump"),
                 "-h", str(work), "-U", "postgres", name],
            )  # fmt: skip
    finally:
        say(f"[3/{STEPS}] stopping the PostgreSQL {found} cluster")
        _run([pg_ctl, "-D", str(data_dir), "-w", "-m", "fast", "stop"], user=old.system_user)
    return counts


def _restore(
    server: Any, work: Path, counts: dict[str, dict[str, int]], target: int, say: Say
) -> None:
    say(f"[5/{STEPS}] restoring into PostgreSQL {target} and checking every table's rows")
    tools = bin_dir()
    admin = str(server.get_uri("postgres"))
    _run(
        [str(tools / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(work / "globals.sql"),
         admin],
    )  # fmt: skip
    for name, tables in counts.items():
        _run(
            [str(tools / "pg_restore"), "--create", "--exit-on-error", "-d", admin,
             str(work / f"{name}.dump")],
        )  # fmt: skip
        restored = _row_counts(str(server.get_uri(name)))
        if restored != tables:
            differing = sorted(
                t for t in set(tables) | set(restored) if tables.get(t) != restored.get(t)
            )
            raise UpgradeError(f"database {name} restored with other row counts in {differing}")


def _row_counts(url: str) -> dict[str, int]:
    """Every ordinary table's exact row count (the superuser reads past row-level security)."""
    with psycopg.connect(url, autocommit=True) as connection:
        tables = connection.execute(
            "SELECT n.nspname, c.relname FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p')"
            " AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
            " AND n.nspname NOT LIKE 'pg_toast%' ORDER BY 1, 2"
        ).fetchall()
        counts: dict[str, int] = {}
        for schema, table in tables:
            statement = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, table))
            row = connection.execute(statement).fetchone()
            counts[f"{schema}.{table}"] = int(row[0]) if row else 0
        return counts
