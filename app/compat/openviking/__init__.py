"""The OpenViking-compatible API (``/api/v1``): OpenViking's session routes, envelope and
error codes over the same services as ``/v1``. Never reaches a repository or the database."""
