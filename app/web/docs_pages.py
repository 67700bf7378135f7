"""The API docs pages (Swagger UI at ``…/docs``, ReDoc at ``…/redoc``) load nothing from other
sites.

Their scripts and styles are served by the service (``fastapi-offline``); ReDoc's bundle still
holds one image from its vendor's CDN, so these two pages are answered with a Content Security
Policy that allows this origin only (and ``data:``/``blob:``, which the bundles use): the
browser never makes the request, and the page works with no network.
"""

from __future__ import annotations

from typing import Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

POLICY: Final = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self' 'unsafe-inline'; worker-src 'self' blob:; connect-src 'self'; "
    "font-src 'self' data:"
)

PAGES: Final = ("/docs", "/redoc")


class OfflineDocsPolicy:
    """Pure ASGI middleware: the policy header on the answers of the docs pages."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope["path"]).endswith(PAGES):
            await self.app(scope, receive, send)
            return

        async def with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"content-security-policy", POLICY.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_policy)
