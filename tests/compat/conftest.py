"""Fixtures for the OpenViking-compatible API: the archive tests' own database and app factory.

Only re-exports; the fixtures live with the tests that introduced them.
"""

from tests.archives.conftest import app_client, own_database

__all__ = ["app_client", "own_database"]
