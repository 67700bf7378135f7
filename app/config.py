"""Typed settings: every knob of the service, read from ``WORKMEM_*`` environment variables.

Owns names, defaults and validation of configuration. Never reads files or opens connections.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_home() -> Path:
    return Path.home() / ".local" / "share" / "workmem"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WORKMEM_", extra="ignore")

    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "WORKMEM_DATABASE_URL"),
        description="postgresql+psycopg://… of an existing server, logging in as workmem_app; "
        "unset = embedded Postgres",
    )
    admin_database_url: str | None = Field(
        default=None,
        description="the schema owner's URL, for migrations and auditor logins (`workmem db …`, "
        "`workmem auditors …`); never used by serve or worker",
    )
    service_key: SecretStr | None = Field(
        default=None,
        description="the key of the service's own work across tenants (workers, maintenance, "
        "operator commands); `workmem db upgrade` registers its digest. Unset on the embedded "
        "database: kept in $WORKMEM_HOME/service.key",
    )
    app_db_password: SecretStr | None = Field(
        default=None,
        description="`workmem db upgrade` sets it as workmem_app's login password",
    )
    home: Path = Field(
        default_factory=default_home, description="data directory of the embedded mode"
    )
    embedded_restart: bool = Field(
        default=True,
        description="`serve` starts the embedded cluster again when its postmaster dies; off "
        "where an operator stops and starts the cluster by hand",
    )
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    admin_token: SecretStr | None = Field(default=None, description="operator token for /v1/admin")

    pool_size: int = Field(default=10, ge=1)
    group_commit: bool = Field(
        default=True,
        description="concurrent single appends of this process share one transaction",
    )
    group_commit_max_batch: int = Field(default=64, ge=1, le=1000)
    max_message_bytes: int = Field(default=1024 * 1024, ge=1024)
    max_batch_messages: int = Field(default=500, ge=1)
    default_keep_recent_count: int = Field(default=10, ge=0, le=10_000)

    llm_provider: Literal["auto", "offline", "openai"] = Field(
        default="auto", description="auto: openai when WORKMEM_LLM_API_KEY is set, else offline"
    )
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_model: str = "gpt-4o-mini"
    llm_timeout_s: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=2, ge=0, le=10)
    llm_fallback: Literal["offline", "none"] = Field(
        default="offline",
        description="what runs when the model is unavailable: the offline extractor, or nothing "
        "(the archive is retried with backoff, then fails)",
    )
    llm_max_input_tokens: int = Field(default=24_000, ge=1_000)
    llm_breaker_failures: int = Field(
        default=3,
        ge=1,
        le=100,
        description="consecutive failed model calls (timeouts, 429, 5xx) that open the "
        "provider's circuit: calls then fall back at once",
    )
    llm_breaker_cooldown_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="how long an open circuit refuses model calls before one probes again",
    )

    guard_key_facts_max_items: int = Field(default=25, ge=1)
    guard_key_facts_max_tokens: int = Field(default=1500, ge=1)
    guard_key_facts_emergency_items: int = Field(default=50, ge=1)
    guard_key_facts_emergency_tokens: int = Field(default=3000, ge=1)
    guard_oversized_append_cap: int = Field(default=5, ge=0)
    guard_consolidation_min_ratio: float = Field(default=0.15, ge=0, le=1)
    guard_anchor_min_coverage: float = Field(default=0.70, ge=0, le=1)
    guard_warning_items: int = Field(default=25, ge=1)
    guard_warning_tokens: int = Field(default=1500, ge=1)

    worker_enabled: bool = Field(default=True, description="run the in-process worker in serve")
    prepare_idle_s: float = Field(
        default=2.0,
        ge=0,
        description=(
            "seconds an agent session stays idle before the in-process worker prepares its next "
            "archive ahead (offline generation only); 0 turns preparing off"
        ),
    )
    worker_lease_s: float = Field(
        default=30.0,
        ge=3,
        description="an archive's lease; the worker renews it every third of it while it works, "
        "so a crashed worker's archive is claimable again within one lease",
    )
    worker_max_attempts: int = Field(default=5, ge=1)
    worker_poll_s: float = Field(default=1.0, gt=0)
    worker_backoff_base_s: float = Field(default=2.0, ge=0)
    worker_backoff_max_s: float = Field(default=300.0, ge=0)
    commit_wait_timeout_s: float = Field(default=30.0, gt=0, le=600)
    retention_every_s: float = Field(
        default=300.0,
        gt=0,
        description="how often each worker runs a retention pass over every tenant (when idle)",
    )
    retention_batch: int = Field(
        default=500,
        ge=1,
        le=100_000,
        description="rows of each kind (archives, agent sessions, memories) one pass may purge "
        "per tenant",
    )

    log_level: str = "INFO"
    log_json: bool = True
    otel_endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP collector (http://host:4318): traces and metrics go there; off "
        "unless this or OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set",
    )
    otel_service_name: str = Field(default="workmem", min_length=1, max_length=200)
    otel_metrics_interval_s: float = Field(default=60.0, gt=0, le=3600)

    # --- long-term memory (DESIGN 9): extraction, embeddings, search ---------------------------
    memory_extractor: Literal["auto", "rules", "model", "off"] = Field(
        default="auto",
        description="auto: the model when one is configured, else the rules; off: no extraction",
    )
    memory_min_confidence: float = Field(default=0.5, ge=0, le=1)
    memory_duplicate_similarity: float = Field(default=0.92, gt=0, le=1)
    memory_min_score: float = Field(
        default=0.1,
        ge=-1,
        le=1,
        description="default min_score of search and recall (cosine similarity to the query)",
    )
    embedding_provider: Literal["hashing", "openai"] = "hashing"
    embedding_dim: int = Field(
        default=384,
        ge=1,
        le=2000,
        description="dimension of memories.embedding, fixed when the migration runs",
    )
    embedding_base_url: str | None = Field(default=None, description="default: the LLM's")
    embedding_api_key: SecretStr | None = Field(default=None, description="default: the LLM's")
    embedding_model: str = "text-embedding-3-small"
    embedding_dimensions: int | None = Field(
        default=None, ge=1, le=2000, description="`dimensions` sent to an openai embedder"
    )
    embedding_timeout_s: float = Field(default=30.0, gt=0)
    embedding_max_retries: int = Field(default=2, ge=0, le=10)

    # --- Bounds: request bodies, the database, retries, per-tenant limits ----------------------
    max_metadata_bytes: int = Field(default=64 * 1024, ge=1024)
    max_body_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=64 * 1024,
        description="largest request body, enforced while it is read (413 beyond)",
    )
    http_header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="a connection whose request line and headers are not whole this long after "
        "it opened (or after the previous response) is closed",
    )
    http_max_header_bytes: int = Field(
        default=64 * 1024,
        ge=4 * 1024,
        le=1024 * 1024,
        description="a connection whose pending request line and headers pass this is closed",
    )
    http_max_connections: int = Field(
        default=1000,
        ge=1,
        le=100_000,
        description="client connections one server process holds; one more is closed at once",
    )
    http_keep_alive_s: float = Field(
        default=5.0, gt=0, le=300, description="an idle keep-alive connection is closed after this"
    )
    body_idle_timeout_s: float = Field(
        default=10.0, gt=0, description="408 when a request body stops arriving this long"
    )
    body_timeout_s: float = Field(
        default=60.0, gt=0, description="408 when a request body is not whole after this long"
    )
    db_connect_timeout_s: float = Field(
        default=1.0,
        gt=0,
        description="getting a database connection (from a pool or a new one); 503 beyond",
    )
    db_statement_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Postgres cancels a statement running longer (statement_timeout); the "
        "service gives up on an unanswered one a second after",
    )
    db_keepalive_s: int = Field(
        default=10, ge=1, description="TCP keepalive idle time of database connections"
    )
    idempotency_ttl_s: float = Field(
        default=24 * 3600.0, ge=60, description="how long an Idempotency-Key's answer is kept"
    )
    rate_messages_per_minute: int = Field(
        default=0, ge=0, description="messages a tenant may append per minute per process; 0 = off"
    )
    quota_stored_bytes: int = Field(
        default=0, ge=0, description="JSON bytes of messages a tenant may store; 0 = off"
    )
    quota_agent_sessions: int = Field(
        default=0, ge=0, description="agent sessions a tenant may hold; 0 = off"
    )
    # --- webhooks (DESIGN 19): the delivery loop and its destinations ---------------------------
    webhooks_delivery: bool = Field(
        default=True,
        description="deliver webhooks from this process (serve: only with the in-process "
        "worker; worker: always)",
    )
    webhooks_allow_private: bool = Field(
        default=False,
        description="allow destinations that resolve to loopback, private or link-local "
        "addresses (off: only public addresses are called)",
    )
    webhooks_max_subscriptions: int = Field(
        default=25,
        ge=1,
        le=10_000,
        description="webhook subscriptions a tenant may hold (each event is one delivery per "
        "subscription)",
    )
    webhooks_timeout_s: float = Field(default=10.0, gt=0, le=300)
    webhooks_max_attempts: int = Field(default=8, ge=1, le=100)
    webhooks_backoff_base_s: float = Field(default=5.0, ge=0)
    webhooks_backoff_max_s: float = Field(default=3600.0, ge=0)
    webhooks_poll_s: float = Field(default=1.0, gt=0)
    webhooks_lease_s: float = Field(default=60.0, gt=0)
    webhooks_batch: int = Field(default=16, ge=1, le=500)
    # --- pins (DESIGN 18) ------------------------------------------------------------------------
    pin_max_tokens: int = Field(
        default=2000,
        ge=1,
        le=100_000,
        description="the most all pins in force of one agent session may hold, in tokens",
    )

    @property
    def use_openai(self) -> bool:
        if self.llm_provider == "auto":
            return self.llm_api_key is not None
        return self.llm_provider == "openai"

    @property
    def memory_mode(self) -> Literal["rules", "model", "off"]:
        """The memory extractor that runs: ``auto`` follows the working-memory generator."""
        if self.memory_extractor == "auto":
            return "model" if self.use_openai else "rules"
        return self.memory_extractor

    @property
    def embedder_dim(self) -> int:
        """The dimension the configured embedder produces."""
        if self.embedding_provider == "openai" and self.embedding_dimensions is not None:
            return self.embedding_dimensions
        return self.embedding_dim

    @property
    def key_file(self) -> Path:
        return self.home / "local-api-key"

    @property
    def embedded_data_dir(self) -> Path:
        return self.home / "pgdata"
