"""Fixtures for long-term memory tests: the archive tests' own database and app factory, the
fake model server.

Only re-exports; the fixtures live with the tests that introduced them.
"""

from tests.archives.conftest import app_client, own_database
from tests.support.fake_openai import fake_openai

__all__ = ["app_client", "fake_openai", "own_database"]
