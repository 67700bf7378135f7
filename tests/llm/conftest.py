"""Fixtures for the model-provider tests: the local OpenAI-compatible server.

Only re-exports; the fixture itself lives with the server in ``tests.support.fake_openai``.
"""

from tests.support.fake_openai import fake_openai

__all__ = ["fake_openai"]
