"""Fixtures for context tests: the fake model (the rest are the shared ones of tests/conftest.py).

Only re-exports; the fixtures live with the tests that introduced them.
"""

from tests.support.fake_openai import fake_openai

__all__ = ["fake_openai"]
