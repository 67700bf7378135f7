"""Archive tests use the shared fixtures of ``tests/conftest.py`` (``own_database``, ``app_client``)."""
