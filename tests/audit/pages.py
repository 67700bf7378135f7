"""Signing in to the /ui pages from a test client, as a browser does with the form."""

from __future__ import annotations

import re

import httpx

_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(page: str) -> str:
    found = _TOKEN.search(page)
    assert found is not None, "the page has no CSRF token"
    return found.group(1)


async def sign_in(http: httpx.AsyncClient, key: str) -> httpx.Response:
    """Load the form, post the key with the form's token; the cookies stay on ``http``."""
    form = await http.get("/ui/sign-in")
    assert form.status_code == 200
    return await http.post("/ui/sign-in", data={"api_key": key, "csrf_token": csrf_of(form.text)})
