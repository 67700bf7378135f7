"""The service's Prometheus metrics beyond the HTTP ones, and the ``/metrics`` answer.

Owns every metric's name, labels and help text: archive jobs (queue depth and age, outcomes,
phase-2 duration, generators, guard decisions), model calls, connection pools, per-tenant limits,
idempotent replays and retention's purges. Labels never carry tenant ids, keys or content. The
queue figures come from one privileged function at scrape time (``docs/operations.md``);
everything else is counted where it happens. Never decides anything.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest
from sqlalchemy import text

from app.db import Database

logger = logging.getLogger(__name__)

ARCHIVE_QUEUE = Gauge(
    "workmem_archive_queue_archives", "Unfinished archives, by status (all tenants)", ["status"]
)
ARCHIVE_QUEUE_AGE = Gauge(
    "workmem_archive_queue_oldest_age_seconds",
    "Age of the oldest unfinished archive, by status (0 when there is none)",
    ["status"],
)
ARCHIVES_FINISHED = Counter(
    "workmem_archives_finished_total", "Archives finished by this process, by status", ["status"]
)
PREPARED = Counter(
    "workmem_archives_prepared_total",
    "Idle agent sessions whose next archive this process prepared ahead, by outcome",
    ["outcome"],
)
RESUMED = Counter(
    "workmem_archives_resumed_total",
    "Archive jobs by whether they resumed from a prepared checkpoint",
    ["resumed"],
)
ARCHIVE_RETRIES = Counter(
    "workmem_archive_retries_total", "Archives put back to pending after a transient failure"
)
PHASE2_DURATION = Histogram(
    "workmem_archive_phase2_duration_seconds",
    "Phase 2 of one archive (load, generate, write), by outcome",
    ["outcome"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
)
GENERATORS = Counter(
    "workmem_archives_by_generator_total",
    "Done archives by the path that produced them",
    ["generator"],
)
GUARD_DECISIONS = Counter(
    "workmem_guard_decisions_total",
    "Section decisions of done archives, by guard and reason",
    ["guard", "reason"],
)
MODEL_CALLS = Histogram(
    "workmem_model_call_duration_seconds",
    "Model calls, by outcome (ok, or the error code)",
    ["outcome"],
    buckets=(0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 60, 120),
)
MODEL_ERRORS = Counter(
    "workmem_model_call_errors_total", "Failed model calls, by error code", ["code"]
)
MODEL_CIRCUIT_OPEN = Gauge(
    "workmem_model_circuit_open",
    "1 while the model provider's circuit is open (calls fall back at once), else 0",
    ["provider"],
)
MODEL_CIRCUIT_TRANSITIONS = Counter(
    "workmem_model_circuit_transitions_total",
    "Changes of the model provider's circuit, by the state entered",
    ["provider", "state"],
)
MODEL_CIRCUIT_REFUSED = Counter(
    "workmem_model_circuit_refused_total",
    "Model calls not made because the provider's circuit was open",
    ["provider"],
)
CONNECTIONS_CLOSED = Counter(
    "workmem_http_connections_closed_total",
    "Client connections the server closed before a request: header_timeout, "
    "header_too_large, connection_cap",
    ["reason"],
)
POOL_CONNECTIONS = Gauge(
    "workmem_db_pool_connections",
    "Database connections of this process, by pool (transactions, appends) and state",
    ["pool", "state"],
)
DATABASE_ERRORS = Counter(
    "workmem_database_errors_total",
    "Requests answered 503 because of the database, by problem type",
    ["type"],
)
LIMITED = Counter(
    "workmem_limited_requests_total", "Requests refused with 429, by limit", ["limit"]
)
IDEMPOTENT_REPLAYS = Counter(
    "workmem_idempotent_replays_total", "Requests answered from a stored Idempotency-Key answer"
)
METRICS_DATABASE_UP = Gauge(
    "workmem_metrics_database_up", "1 when the last scrape could read the archive queue"
)

QUEUE_STATUSES = ("pending", "running")
_QUEUE = "SELECT status, archives, oldest_age_s FROM workmem_archive_queue()"

RETENTION_PURGED = Counter(
    "workmem_retention_purged_total",
    "Rows retention deleted, by kind: archive_messages (raw messages of old archives), "
    "idle_sessions, expired_memories",
    ["kind"],
)
RETENTION_PASSES = Counter(
    "workmem_retention_passes_total",
    "Retention passes of this process, by outcome (done, or error when one was cut short)",
    ["outcome"],
)


def record_decisions(decisions: Iterable[tuple[str | None, str]]) -> None:
    """Count the seven decisions of a done archive: ``(guard, reason)`` each."""
    for guard, reason in decisions:
        GUARD_DECISIONS.labels(guard or "none", reason).inc()


async def refresh_queue(database: Database, *, timeout_s: float) -> None:
    """Read the archive queue into its gauges; on failure leave them and say so."""
    try:
        async with asyncio.timeout(timeout_s), database.unscoped() as db:
            rows = (await db.execute(text(_QUEUE))).all()
    except Exception as error:  # a scrape must answer whatever the database does
        METRICS_DATABASE_UP.set(0)
        logger.debug("archive queue not read", extra={"error": type(error).__name__})
        return
    seen = {str(row.status): row for row in rows}
    for status in QUEUE_STATUSES:
        row = seen.get(status)
        ARCHIVE_QUEUE.labels(status).set(0 if row is None else row.archives)
        ARCHIVE_QUEUE_AGE.labels(status).set(0 if row is None else row.oldest_age_s)
    METRICS_DATABASE_UP.set(1)


def refresh_pools(database: Database) -> None:
    """Pool usage of this process: SQLAlchemy's (transactions) and psycopg's (appends)."""
    pool = database.engine.sync_engine.pool
    checked_out = int(getattr(pool, "checkedout", lambda: 0)())
    size = int(getattr(pool, "size", lambda: 0)())
    POOL_CONNECTIONS.labels("transactions", "in_use").set(checked_out)
    POOL_CONNECTIONS.labels("transactions", "size").set(size)
    stats = database.pool.get_stats()
    appends_size = stats.get("pool_size", 0)
    POOL_CONNECTIONS.labels("appends", "in_use").set(appends_size - stats.get("pool_available", 0))
    POOL_CONNECTIONS.labels("appends", "size").set(appends_size)
    POOL_CONNECTIONS.labels("appends", "waiting").set(stats.get("requests_waiting", 0))


async def exposition(database: Database, *, timeout_s: float = 1.0) -> tuple[bytes, str]:
    """The text of ``/metrics`` and its content type, with the gauges read just before."""
    await refresh_queue(database, timeout_s=timeout_s)
    refresh_pools(database)
    return generate_latest(), CONTENT_TYPE_LATEST


# --- what the models cost (app/usage): tokens and calls by model and purpose -------------------

MODEL_TOKENS = Counter(
    "workmem_model_tokens_total",
    "Tokens the model provider reported, by model, purpose and direction (input, output)",
    ["model", "purpose", "direction"],
)
MODEL_CALLS_BY_OUTCOME = Counter(
    "workmem_model_calls_total",
    "Model and embedding calls, by purpose and outcome (ok, error, refused)",
    ["purpose", "outcome"],
)
USAGE_ROWS_DROPPED = Counter(
    "workmem_model_usage_rows_dropped_total",
    "Model-call rows not written to model_calls, by reason (no_tenant, queue_full, write_failed)",
    ["reason"],
)
