"""The ``/ui`` pages: sign in with an API key, agent sessions, a timeline of archives, one
archive's sections with diffs and guard badges, its raw messages, the text search, and what the
model saw in each recorded context.

Owns HTTP only — parameters, the transaction of each request, cookies, and rendering templates;
errors become HTML pages here (the API keeps problem+json). Never decides what to show: that is
``AuditService``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Coroutine
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any

import jinja2
from fastapi import APIRouter, Depends, FastAPI, Form, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from app.audit import presentation
from app.audit.service import TIMELINE_PAGE, AuditService
from app.audit.signin import (
    CSRF_COOKIE,
    KEY_COOKIE,
    KEY_MAX_AGE_S,
    SignInRequired,
    csrf_token,
    forget_key,
    form_is_ours,
    set_cookie,
)
from app.deps import DatabaseDep
from app.errors import AppError, Forbidden, Unauthenticated
from app.tenancy.auth import Authenticator, authenticator
from app.tenancy.principal import Principal, Role
from app.usage.chart import chart, daily_tokens
from app.usage.endpoints import model_usage, report
from app.validation import SEQ_MAX

HERE = Path(__file__).parent
INT32_MAX = 2**31 - 1
MESSAGES_PAGE = 100

# Pages carry one tenant's data: never cached, never framed, no script or style from elsewhere.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _when(moment: datetime | None) -> str:
    return "—" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


environment = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
environment.filters.update(
    when=_when,
    tone=presentation.tone,
    phrase=presentation.phrase,
    detail_text=presentation.detail_text,
    message_lines=presentation.message_lines,
)
environment.globals.update(is_intervention=presentation.is_intervention)
templates = Jinja2Templates(env=environment)


def render(
    request: Request, name: str, context: dict[str, Any], *, status_code: int = 200
) -> HTMLResponse:
    token, is_new = csrf_token(request)
    signed_in = KEY_COOKIE in request.cookies
    response = templates.TemplateResponse(
        request,
        name,
        {**context, "csrf_token": token, "signed_in": signed_in},
        status_code=status_code,
    )
    if is_new:
        set_cookie(response, request, CSRF_COOKIE, token, max_age=None)
    return response


def _sign_in_page(request: Request) -> Response:
    response = RedirectResponse("/ui/sign-in", status_code=303)
    forget_key(response, request)
    return response


class PageRoute(APIRoute):
    """A route whose errors are pages: sign-in, 404, 422 and 503 answer in HTML."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page(request: Request) -> Response:
            try:
                response = await handler(request)
            except SignInRequired:
                response = _sign_in_page(request)
            except AppError as error:
                response = render(
                    request,
                    "error.html",
                    {"status": error.status, "title": error.title, "detail": error.detail},
                    status_code=error.status,
                )
            except RequestValidationError:
                response = render(
                    request,
                    "error.html",
                    {
                        "status": 422,
                        "title": "The request is not valid",
                        "detail": "A parameter of this address is malformed.",
                    },
                    status_code=422,
                )
            response.headers.update(PAGE_HEADERS)
            return response

        return page


router = APIRouter(prefix="/ui", include_in_schema=False, route_class=PageRoute)


async def page_principal(
    request: Request, auth: Annotated[Authenticator, Depends(authenticator)]
) -> Principal:
    """The principal of the key in the cookie; any role may read the pages."""
    token = request.cookies.get(KEY_COOKIE)
    if not token:
        raise SignInRequired
    try:
        return await auth.principal(token)
    except Unauthenticated:
        raise SignInRequired from None


PagePrincipal = Annotated[Principal, Depends(page_principal)]
ArchiveSeq = Annotated[int, PathParam(ge=1, le=INT32_MAX)]
Auth = Annotated[Authenticator, Depends(authenticator)]


def install(app: FastAPI) -> None:
    """Mount the pages and their stylesheet (served by the service itself, no CDN)."""
    app.include_router(router)
    app.mount("/ui/static", StaticFiles(directory=HERE / "static"), name="ui-static")


@router.get("")
async def home() -> Response:
    return RedirectResponse("/ui/sessions", status_code=303)


@router.get("/sign-in")
async def sign_in_form(request: Request) -> Response:
    return render(request, "sign_in.html", {"error": None})


@router.post("/sign-in")
async def sign_in(
    request: Request,
    auth: Auth,
    api_key: Annotated[str, Form(max_length=200)],
    csrf: Annotated[str, Form(alias="csrf_token", max_length=200)] = "",
) -> Response:
    if not form_is_ours(request, csrf):
        return render(
            request,
            "sign_in.html",
            {"error": "This form expired or came from another site. Please sign in again."},
            status_code=403,
        )
    key = api_key.strip()
    try:
        if auth.is_operator_token(key):
            raise Unauthenticated("the operator token cannot read tenant data")
        await auth.principal(key)
    except Unauthenticated:
        return render(
            request,
            "sign_in.html",
            {"error": "This API key is unknown, malformed or revoked."},
            status_code=401,
        )
    response = RedirectResponse("/ui/sessions", status_code=303)
    set_cookie(response, request, KEY_COOKIE, key, max_age=KEY_MAX_AGE_S)
    return response


@router.post("/sign-out")
async def sign_out(
    request: Request, csrf: Annotated[str, Form(alias="csrf_token", max_length=200)] = ""
) -> Response:
    if not form_is_ours(request, csrf):
        return render(
            request,
            "error.html",
            {"status": 403, "title": "Forbidden", "detail": "This form came from another site."},
            status_code=403,
        )
    return _sign_in_page(request)


@router.get("/sessions")
async def agent_sessions(
    request: Request,
    principal: PagePrincipal,
    database: DatabaseDep,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    async with database.tenant(principal.tenant_id) as db:
        rows, next_cursor = await AuditService(db, principal).agent_sessions_page(
            cursor=cursor, limit=50
        )
    return render(
        request,
        "sessions.html",
        {"rows": rows, "next_cursor": next_cursor, "is_first_page": cursor is None},
    )


@router.get("/sessions/{agent_session_id}")
async def timeline(
    request: Request,
    agent_session_id: uuid.UUID,
    principal: PagePrincipal,
    database: DatabaseDep,
    before: Annotated[int | None, Query(ge=1, le=INT32_MAX)] = None,
) -> Response:
    async with database.tenant(principal.tenant_id) as db:
        found = await AuditService(db, principal).timeline(
            agent_session_id, before=before, limit=TIMELINE_PAGE
        )
    return render(request, "timeline.html", {"timeline": found})


@router.get("/sessions/{agent_session_id}/contexts")
async def recorded_contexts(
    request: Request,
    agent_session_id: uuid.UUID,
    principal: PagePrincipal,
    database: DatabaseDep,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    async with database.tenant(principal.tenant_id) as db:
        agent_session, rows, next_cursor = await AuditService(db, principal).contexts(
            agent_session_id, cursor=cursor
        )
    return render(
        request,
        "contexts.html",
        {
            "agent_session": agent_session,
            "rows": rows,
            "next_cursor": next_cursor,
            "is_first_page": cursor is None,
        },
    )


@router.get("/sessions/{agent_session_id}/contexts/{context_id}")
async def recorded_context(
    request: Request,
    agent_session_id: uuid.UUID,
    context_id: uuid.UUID,
    principal: PagePrincipal,
    database: DatabaseDep,
) -> Response:
    """What the model saw: the recorded context rebuilt, each message linked to its part."""
    async with database.tenant(principal.tenant_id) as db:
        found = await AuditService(db, principal).seen(agent_session_id, context_id)
    return render(request, "context.html", {"seen": found})


@router.get("/sessions/{agent_session_id}/search")
async def search(
    request: Request,
    agent_session_id: uuid.UUID,
    principal: PagePrincipal,
    database: DatabaseDep,
    q: Annotated[str, Query(max_length=200)] = "",
) -> Response:
    async with database.tenant(principal.tenant_id) as db:
        found = await AuditService(db, principal).search(agent_session_id, q.strip())
    return render(request, "search.html", {"search": found})


@router.get("/sessions/{agent_session_id}/archives/{archive_seq}")
async def archive(
    request: Request,
    agent_session_id: uuid.UUID,
    archive_seq: ArchiveSeq,
    principal: PagePrincipal,
    database: DatabaseDep,
) -> Response:
    async with database.tenant(principal.tenant_id) as db:
        detail = await AuditService(db, principal).archive(agent_session_id, archive_seq)
    return render(request, "archive.html", {"detail": detail})


@router.get("/sessions/{agent_session_id}/archives/{archive_seq}/messages")
async def archive_messages(
    request: Request,
    agent_session_id: uuid.UUID,
    archive_seq: ArchiveSeq,
    principal: PagePrincipal,
    database: DatabaseDep,
    after_seq: Annotated[int, Query(ge=0, le=SEQ_MAX)] = 0,
) -> Response:
    async with database.tenant(principal.tenant_id) as db:
        found = await AuditService(db, principal).messages(
            agent_session_id, archive_seq, after_seq=after_seq, limit=MESSAGES_PAGE
        )
    return render(
        request,
        "messages.html",
        {"expanded": found.expanded, "agent_session": found.agent_session},
    )


@router.get("/usage")
async def usage(
    request: Request,
    principal: PagePrincipal,
    database: DatabaseDep,
    first: Annotated[date | None, Query(alias="from")] = None,
    last: Annotated[date | None, Query(alias="to")] = None,
) -> Response:
    """What the models cost, by day: a tenant admin key not bound to a user, like the API."""
    if principal.role != Role.ADMIN or principal.user_id is not None:
        raise Forbidden("Model usage takes a tenant admin key not bound to a user.")
    found = report(await model_usage(principal, database, first, last))
    days = daily_tokens(
        found.from_,
        found.to,
        ((item.day, item.input_tokens, item.output_tokens) for item in found.items),
    )
    return render(
        request,
        "usage.html",
        {
            "first": found.from_,
            "last": found.to,
            "items": found.items,
            "totals": found.totals,
            "chart": chart(days),
        },
    )
