"""Where a client finds workmem: ``WORKMEM_URL`` and ``WORKMEM_API_KEY`` from the environment.

Owns the names and defaults of the client's own settings (the server's are ``app.config``).
Never opens a connection.
"""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_URL = "http://127.0.0.1:8000"


class ClientSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WORKMEM_", extra="ignore")

    url: str = Field(default=DEFAULT_URL, description="the base URL of a workmem deployment")
    api_key: SecretStr | None = Field(default=None, description="an API key, wm_…")


class MissingApiKey(ValueError):
    """No key was given and ``WORKMEM_API_KEY`` is not set."""


def resolve(base_url: str | None, api_key: str | None) -> tuple[str, str]:
    """The base URL and key: the arguments when given, else the environment's."""
    settings = ClientSettings()
    configured = None if settings.api_key is None else settings.api_key.get_secret_value()
    key = api_key if api_key is not None else configured
    if not key:
        raise MissingApiKey("no API key: pass api_key or set WORKMEM_API_KEY")
    return (base_url or settings.url).rstrip("/"), key
