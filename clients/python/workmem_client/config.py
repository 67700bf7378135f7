"""Where a client finds workmem: ``WORKMEM_URL`` and ``WORKMEM_API_KEY`` from the environment.

Owns the names and defaults of the client's own settings. Never opens a connection.
"""

from __future__ import annotations

import os

DEFAULT_URL = "http://127.0.0.1:8000"


class MissingApiKey(ValueError):
    """No key was given and ``WORKMEM_API_KEY`` is not set."""


def resolve(base_url: str | None, api_key: str | None) -> tuple[str, str]:
    """The base URL and key: the arguments when given, else ``WORKMEM_URL`` (default
    ``http://127.0.0.1:8000``) and ``WORKMEM_API_KEY``."""
    key = api_key if api_key is not None else os.environ.get("WORKMEM_API_KEY")
    if not key:
        raise MissingApiKey("no API key: pass api_key or set WORKMEM_API_KEY")
    url = base_url or os.environ.get("WORKMEM_URL") or DEFAULT_URL
    return url.rstrip("/"), key
