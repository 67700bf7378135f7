"""Typed settings: every knob of the service, read from ``WORKMEM_*`` environment variables.

Owns names, defaults and validation of configuration. Never reads files or opens connections.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_home() -> Path:
    return Path.home() / ".local" / "share" / "workmem"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WORKMEM_", extra="ignore")

    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "WORKMEM_DATABASE_URL"),
        description="postgresql+psycopg://… of an existing server; unset = embedded Postgres",
    )
    home: Path = Field(
        default_factory=default_home, description="data directory of the embedded mode"
    )
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    admin_token: SecretStr | None = Field(default=None, description="operator token for /v1/admin")

    pool_size: int = Field(default=10, ge=1)
    max_message_bytes: int = Field(default=1024 * 1024, ge=1024)
    max_batch_messages: int = Field(default=500, ge=1)
    default_keep_recent_count: int = Field(default=10, ge=0, le=10_000)

    log_level: str = "INFO"
    log_json: bool = True

    @property
    def key_file(self) -> Path:
        return self.home / "local-api-key"

    @property
    def embedded_data_dir(self) -> Path:
        return self.home / "pgdata"
