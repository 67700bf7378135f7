"""The embedded Postgres (with pgvector) used when no ``DATABASE_URL`` is configured.

Owns starting a private cluster from the ``pgserver`` package in a data directory that survives
restarts, and creating the ``workmem`` database in it. Never used when a URL is configured.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.db import normalize_url

logger = logging.getLogger(__name__)

DATABASE_NAME = "workmem"


@dataclass(slots=True)
class EmbeddedPostgres:
    data_dir: Path
    server: Any

    def url(self, database: str = DATABASE_NAME) -> str:
        return normalize_url(str(self.server.get_uri(database)))

    def create_database(self, database: str) -> None:
        exists = self.server.psql(
            f"SELECT 1 FROM pg_database WHERE datname = '{database}';"  # noqa: S608 - fixed names
        )
        if "(1 row)" not in exists:
            self.server.psql(f'CREATE DATABASE "{database}";')

    def stop(self) -> None:
        self.server.cleanup()


def start_embedded(data_dir: Path, *, database: str = DATABASE_NAME) -> EmbeddedPostgres:
    """Start (or attach to) the cluster in ``data_dir`` and make sure ``database`` exists."""
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        # Its runtime directory falls back to /tmp when XDG_RUNTIME_DIR is unset, which is fine.
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        from pgserver.postgres_server import get_server

        server = get_server(data_dir, cleanup_mode="stop")
    embedded = EmbeddedPostgres(data_dir=data_dir, server=server)
    embedded.create_database(database)
    logger.info("embedded postgres ready", extra={"data_dir": str(data_dir)})
    return embedded
