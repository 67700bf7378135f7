"""How the OpenAPI documents state authentication: one HTTP bearer scheme.

Owns ``document_security``, which declares the ``bearer`` scheme (an API key, or the operator
token on ``/v1/admin``) and puts it on every operation that can answer 401, so Swagger UI shows
an Authorize button and its "Try it out" sends the key. Never decides who may do what.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from fastapi import FastAPI

SCHEME: Final = "bearer"

BEARER: Final[dict[str, str]] = {
    "type": "http",
    "scheme": "bearer",
    "description": (
        "an API key (`Authorization: Bearer <key>`; `X-API-Key: <key>` works too), "
        "or the operator token for /v1/admin"
    ),
}


def document_security(app: FastAPI) -> None:
    generate: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        document = generate()
        if document.get("components", {}).get("securitySchemes", {}).get(SCHEME) is None:
            secure(document)
            app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]


def secure(document: dict[str, Any]) -> None:
    """Declare the scheme and require it of each operation that can answer 401."""
    document.setdefault("components", {}).setdefault("securitySchemes", {})[SCHEME] = BEARER
    for item in document.get("paths", {}).values():
        for operation in item.values():
            if isinstance(operation, dict) and "401" in operation.get("responses", {}):
                operation["security"] = [{SCHEME: []}]
