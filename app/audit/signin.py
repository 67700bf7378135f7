"""Signing in to the audit pages: the key cookie, the CSRF token and the same-origin check.

Owns how an API key is kept between page loads (an ``HttpOnly``, ``SameSite=Strict`` cookie on
``/ui``, ``Secure`` over HTTPS) and how a form post proves it came from our own page (a
double-submit token plus the ``Origin`` header). Never renders the key or puts it in a URL.
"""

from __future__ import annotations

import hmac
import secrets

from starlette.requests import Request
from starlette.responses import Response

KEY_COOKIE = "workmem_ui_key"
CSRF_COOKIE = "workmem_ui_csrf"
COOKIE_PATH = "/ui"
KEY_MAX_AGE_S = 8 * 3600
"""A signed-in browser asks for the key again after a working day."""


class SignInRequired(Exception):
    """No usable key in the cookie: the page answers with the sign-in form."""


def set_cookie(
    response: Response, request: Request, name: str, value: str, *, max_age: int | None
) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=COOKIE_PATH,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )


def forget_key(response: Response, request: Request) -> None:
    response.delete_cookie(
        KEY_COOKIE,
        path=COOKIE_PATH,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )


def csrf_token(request: Request) -> tuple[str, bool]:
    """The browser's CSRF token, and whether it is new (then the response must set it)."""
    existing = request.cookies.get(CSRF_COOKIE)
    if existing:
        return existing, False
    return secrets.token_urlsafe(32), True


def same_origin(request: Request) -> bool:
    """A browser names the page a form was posted from; it must be one of ours."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return origin == f"{request.url.scheme}://{request.url.netloc}"


def form_is_ours(request: Request, submitted: str) -> bool:
    """The posted token matches the cookie (a cross-site page can read neither) and the
    ``Origin`` header, when sent, is this service."""
    cookie = request.cookies.get(CSRF_COOKIE)
    if not cookie or not submitted:
        return False
    return hmac.compare_digest(cookie.encode(), submitted.encode()) and same_origin(request)
