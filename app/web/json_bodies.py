"""Request bodies of the JSON APIs (``/v1``, ``/api/v1``) are read as JSON whatever content type
they declare.

``curl -d '{…}'`` labels its body ``application/x-www-form-urlencoded``; without this the API
would see bytes where an object was expected. Every route under these prefixes takes JSON (the
form of the ``/ui`` sign-in is elsewhere), and keys travel in headers only, so reading the body
as JSON gives a browser on another site nothing it could not already send. A body that is not
JSON is refused as such (422), whatever it was labelled.
"""

from __future__ import annotations

from typing import Final

from starlette.types import ASGIApp, Receive, Scope, Send

PREFIXES: Final = ("/v1/", "/api/v1/")
JSON: Final = b"application/json"


def declares_json(content_type: bytes) -> bool:
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == JSON or (media.startswith(b"application/") and media.endswith(b"+json"))


class BodiesAreJson:
    """Pure ASGI middleware: a declared non-JSON content type becomes ``application/json``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and str(scope["path"]).startswith(PREFIXES):
            headers = scope["headers"]
            if any(k == b"content-type" and not declares_json(v) for k, v in headers):
                fixed = [(k, JSON if k == b"content-type" else v) for k, v in headers]
                scope = {**scope, "headers": fixed}
        await self.app(scope, receive, send)
