"""``GET /``: where the address ``workmem serve`` prints leads — the version and the way on.

A small static page (no script, nothing from other sites) linking the API docs, the audit
pages and the health routes. Holds no feature logic.
"""

from __future__ import annotations

from html import escape

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

LINKS = (
    ("/docs", "API docs (Swagger UI)", "try every /v1 route; Authorize with an API key"),
    ("/redoc", "API reference (ReDoc)", "the same document, to read"),
    ("/openapi.json", "OpenAPI document", "for clients and code generators"),
    ("/api/v1/docs", "OpenViking-compatible API docs", "the /api/v1 routes"),
    ("/ui", "Audit pages", "agent sessions, archives, section history (sign in with a key)"),
    ("/healthz", "Liveness", "the process is up"),
    ("/readyz", "Readiness", "the database answers and is migrated"),
)


def page(version: str) -> str:
    items = "\n".join(
        f'<li><a href="{href}">{escape(name)}</a> — {escape(what)}</li>'
        for href, name, what in LINKS
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8"><title>workmem</title></head>\n'
        f"<body><h1>workmem</h1><p>Version {escape(version)}: working memory for long AI "
        "agent sessions, on Postgres.</p>\n"
        f"<ul>\n{items}\n</ul></body></html>\n"
    )


def install_landing(app: FastAPI) -> None:
    body = page(app.version)

    @app.get("/", include_in_schema=False, response_class=HTMLResponse)
    async def landing() -> HTMLResponse:
        return HTMLResponse(body)
