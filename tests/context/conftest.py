"""Fixtures for context tests: the archive tests' own database and app factory, the fake model.

Only re-exports; the fixtures live with the tests that introduced them.
"""

from tests.archives.conftest import app_client, own_admin_database, own_database, own_urls
from tests.support.fake_openai import fake_openai

__all__ = ["app_client", "fake_openai", "own_admin_database", "own_database", "own_urls"]
