"""The embedded clusters a test run starts, and the proof that it leaves none running.

Every data directory a test starts a cluster in is registered here; at the end of the run the
postgres processes serving them are counted (``tests/conftest.py`` fails the run if any is
left). ``stop_cluster`` stops one whose server process was killed on purpose.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import psutil

from app.embedded import POSTMASTER_PID, is_postmaster_of

RUN_DATA_DIRS: list[Path] = []


def register(data_dir: Path) -> Path:
    resolved = data_dir.resolve()
    if resolved not in RUN_DATA_DIRS:
        RUN_DATA_DIRS.append(resolved)
    return resolved


def postgres_processes(data_dirs: list[Path]) -> dict[Path, list[int]]:
    """The postgres processes (postmasters and their children) serving each directory."""
    found: dict[Path, list[int]] = {}
    wanted = {str(path): path for path in data_dirs}
    for process in psutil.process_iter(["name", "cmdline", "pid"]):
        try:
            if process.info["name"] != "postgres":
                continue
            command = process.info["cmdline"] or []
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        for text, path in wanted.items():
            if text in command:
                found.setdefault(path, []).append(process.info["pid"])
    return found


def postmaster_pid(data_dir: Path) -> int | None:
    try:
        return int((data_dir / POSTMASTER_PID).read_text().splitlines()[0])
    except (OSError, IndexError, ValueError):
        return None


def cluster_url(data_dir: Path, database: str, user: str = "postgres") -> str:
    """A libpq URL to a running cluster, read from its ``postmaster.pid`` (attaching through
    the embedded server's handle would add this process to the cluster's handles and keep it running)."""
    lines = (data_dir / POSTMASTER_PID).read_text().splitlines()
    port, socket_dir = lines[3].strip(), lines[4].strip()
    return f"postgresql://{user}@/{database}?host={socket_dir}&port={port}"


def stop_cluster(data_dir: Path, timeout_s: float = 30) -> None:
    """Stop the cluster in ``data_dir`` if one runs (after its server was killed on purpose)."""
    pid = postmaster_pid(data_dir)
    if pid is None or not is_postmaster_of(pid, data_dir.resolve()):
        return
    psutil.Process(pid).terminate()  # SIGTERM: a smart shutdown
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and psutil.pid_exists(pid):
        time.sleep(0.1)
    if psutil.pid_exists(pid):
        subprocess.run(["kill", "-9", str(pid)], check=False)


def start_cluster(data_dir: Path, socket_dir: Path) -> None:
    """Start a stopped cluster again as the embedded server starts it (its system user, its
    socket), for suites that take the database away from a running server and give it back."""
    import os

    from app.embedded import SYSTEM_USER, pg_command

    pg_ctl = pg_command("pg_ctl")
    user = SYSTEM_USER if os.geteuid() == 0 else None
    pg_ctl(
        ["-w", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(data_dir / "log"), "start"],
        pgdata=data_dir,
        user=user,
        timeout=60,
    )


def socket_dir_of(data_dir: Path) -> Path:
    return Path((data_dir / POSTMASTER_PID).read_text().splitlines()[4].strip())
