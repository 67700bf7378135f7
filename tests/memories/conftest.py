"""Fixtures for long-term memory tests: the fake model server (the rest are the shared ones of
``tests/conftest.py``)."""

from tests.support.fake_openai import fake_openai

__all__ = ["fake_openai"]
