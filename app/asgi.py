"""ASGI entry point for process managers (``uvicorn app.asgi:app``): needs ``DATABASE_URL``."""

from __future__ import annotations

from app.config import Settings
from app.main import create_app
from app.observability import configure_logging

_settings = Settings()
configure_logging(_settings.log_level, as_json=_settings.log_json)
app = create_app(_settings)
