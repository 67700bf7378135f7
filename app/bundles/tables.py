"""What a bundle carries, table by table, and what it leaves out and why.

Pure: names and rules only. The order of ``TABLES`` is the order of import (a row's foreign keys
point at rows of tables before it).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

FORMAT = "workmem.bundle/1"
MANIFEST = "manifest.json"


class Scoped(Enum):
    """How a table's rows are chosen for a scope, and skipped on import."""

    SESSION = "agent_session_id"
    """Rows of the bundle's agent sessions; imported only with an agent session that is new."""
    MEMORY = "memory_id"
    """Memory history: rows of the bundle's memories or agent sessions (all, for a tenant)."""
    USER = "user_id"
    """Rows of the scope's users (all, for a tenant); the target's row wins if it has one."""


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    scoped: Scoped
    order_by: tuple[str, ...]
    identity: str | None = None
    """A number the database gives (``GENERATED ALWAYS``): exported for reference, never
    imported; the target numbers the rows again in the same order."""

    @property
    def path(self) -> str:
        return f"tables/{self.name}.jsonl"


TABLES: tuple[Table, ...] = (
    Table("agent_sessions", Scoped.SESSION, ("created_at", "agent_session_id")),
    Table("agent_session_lineage", Scoped.SESSION, ("agent_session_id", "ancestor_session_id")),
    Table("messages", Scoped.SESSION, ("agent_session_id", "seq")),
    Table("message_retractions", Scoped.SESSION, ("agent_session_id", "seq")),
    Table("message_redactions", Scoped.SESSION, ("agent_session_id", "seq")),
    Table("archives", Scoped.SESSION, ("agent_session_id", "archive_seq")),
    Table("wm_section_versions", Scoped.SESSION, ("agent_session_id", "archive_seq", "section")),
    Table("archive_actions", Scoped.SESSION, ("action_id",), identity="action_id"),
    Table("pins", Scoped.SESSION, ("agent_session_id", "created_at", "pin_id")),
    Table("pin_events", Scoped.SESSION, ("event_id",), identity="event_id"),
    Table("context_records", Scoped.SESSION, ("agent_session_id", "created_at", "context_id")),
    Table("memories", Scoped.SESSION, ("created_at", "memory_id")),
    Table("memory_events", Scoped.MEMORY, ("event_id",), identity="event_id"),
    Table("user_memory_policies", Scoped.USER, ("user_id",)),
)

BY_NAME = {table.name: table for table in TABLES}

LEFT_OUT_COLUMNS: dict[str, tuple[str, ...]] = {
    # Recomputed on import by the target's embedder (and named by it).
    "memories": ("embedding", "embedding_model"),
}
"""Besides ``tenant_id`` (the target's) and the columns Postgres generates."""

EXCLUDED: dict[str, str] = {
    "tenants": "the target tenant exists before the import (--tenant); its name stays its own",
    "api_keys": "credentials do not move: the target's admin issues keys for the target",
    "api_key_prefixes": "the lookup of those credentials",
    "claimable_archives": "the source's archive work queue, derived from its archives",
    "prepared_generations": (
        "generations the source ran ahead of commits, derived from its messages: the target's "
        "worker prepares them again"
    ),
    "claimable_webhook_deliveries": "the source's webhook delivery queue, of its delivery log",
    "auditor_logins": "database roles of the source deployment",
    "receipt_keys": "the source's signing key pair; its private key never leaves the database",
    "user_erasures": (
        "erasure tombstones are the source deployment's audit: its receipts stay verifiable "
        "there, and the erased data is not in the bundle anyway"
    ),
    "model_calls": "what the source deployment's model calls cost: its bill, not the tenant's data",
    "idempotency_keys": "retry answers live for hours and belong to the requests of the source",
    "retention_policies": "a deployment setting: the target's operator sets its own",
    "webhook_subscriptions": (
        "endpoint URLs and signing secrets: a new deployment must not start calling them unasked"
    ),
    "webhook_deliveries": "the source's delivery log",
    "webhook_attempts": "the source's delivery log",
}
"""Every other table with a ``tenant_id``, with the reason it is not in a bundle."""
