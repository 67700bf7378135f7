"""Fixtures for webhook tests: the loopback receiver (the shared ones are tests/conftest.py's).

Only re-exports; the fixture lives with the receiver in ``tests.support.webhook_receiver``.
"""

from tests.support.webhook_receiver import receiver

__all__ = ["receiver"]
