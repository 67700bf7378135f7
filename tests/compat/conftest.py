"""The OpenViking-compatible API's tests use the shared fixtures of ``tests/conftest.py``."""
