"""The /ui pages over HTTP: sign-in and its cookies, CSRF, every page a reader walks through,
404 pages for another tenant, paging of a long timeline, and the locally served API docs."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from http.cookies import SimpleCookie

import httpx
import pytest
from starlette.types import ASGIApp

from tests.audit.fixtures import AuditData
from tests.audit.pages import csrf_of, sign_in
from tests.conftest import ADMIN_TOKEN, TenantKeys
from tests.support.api import append, commit, create_session, user


@pytest.fixture
async def browser(audit_app: ASGIApp) -> AsyncIterator[httpx.AsyncClient]:
    """A client with a cookie jar of its own, like one browser."""
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=audit_app), base_url="http://workmem.test"
    ) as http:
        yield http


def cookie_attributes(response: httpx.Response, name: str) -> dict[str, str | bool]:
    for header in response.headers.get_list("set-cookie"):
        parsed = SimpleCookie()
        parsed.load(header)
        if name in parsed:
            morsel = parsed[name]
            flags = header.lower()
            return {
                "path": morsel["path"],
                "samesite": morsel["samesite"],
                "httponly": "httponly" in flags,
                "secure": "secure" in flags,
                "max-age": morsel["max-age"],
            }
    raise AssertionError(f"no Set-Cookie for {name}")


async def test_pages_send_a_visitor_without_a_key_to_sign_in(
    browser: httpx.AsyncClient, audit_data: AuditData
) -> None:
    for path in ("/ui", "/ui/sessions", f"/ui/sessions/{audit_data.billing}"):
        response = await browser.get(path, follow_redirects=True)
        assert response.url.path == "/ui/sign-in", path
        assert '<label for="api_key">API key</label>' in response.text
    browser.cookies.set("workmem_ui_key", "wm_revoked_or_made_up", path="/ui")
    response = await browser.get("/ui/sessions")
    assert (response.status_code, response.headers["location"]) == (303, "/ui/sign-in")


async def test_sign_in_keeps_the_key_in_a_strict_http_only_cookie(
    browser: httpx.AsyncClient, audit_app: ASGIApp, audit_data: AuditData
) -> None:
    form = await browser.get("/ui/sign-in")
    assert cookie_attributes(form, "workmem_ui_csrf") == {
        "path": "/ui",
        "samesite": "strict",
        "httponly": True,
        "secure": False,
        "max-age": "",
    }
    signed = await sign_in(browser, audit_data.tenant.reader)
    assert (signed.status_code, signed.headers["location"]) == (303, "/ui/sessions")
    assert cookie_attributes(signed, "workmem_ui_key") == {
        "path": "/ui",
        "samesite": "strict",
        "httponly": True,
        "secure": False,
        "max-age": str(8 * 3600),
    }
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=audit_app), base_url="https://workmem.test"
    ) as over_https:
        secure_form = await over_https.get("/ui/sign-in")
        assert cookie_attributes(secure_form, "workmem_ui_csrf")["secure"] is True
        secure = await sign_in(over_https, audit_data.tenant.reader)
        assert cookie_attributes(secure, "workmem_ui_key")["secure"] is True

    signed_out = await browser.post(
        "/ui/sign-out", data={"csrf_token": browser.cookies["workmem_ui_csrf"]}
    )
    assert (signed_out.status_code, signed_out.headers["location"]) == (303, "/ui/sign-in")
    assert 'workmem_ui_key=""' in signed_out.headers["set-cookie"]
    assert "workmem_ui_key" not in browser.cookies
    assert (await browser.get("/ui/sessions")).status_code == 303


@pytest.mark.parametrize(
    ("token", "headers"),
    [
        ("", {}),
        ("forged-token", {}),
        (None, {"Origin": "https://evil.example"}),
        (None, {"Origin": "null"}),
    ],
)
async def test_a_form_post_from_elsewhere_signs_nobody_in(
    browser: httpx.AsyncClient,
    audit_data: AuditData,
    token: str | None,
    headers: dict[str, str],
) -> None:
    form = await browser.get("/ui/sign-in")
    response = await browser.post(
        "/ui/sign-in",
        data={
            "api_key": audit_data.tenant.reader,
            "csrf_token": csrf_of(form.text) if token is None else token,
        },
        headers=headers,
    )
    assert response.status_code == 403
    assert "workmem_ui_key" not in browser.cookies
    assert audit_data.tenant.reader not in response.text


async def test_a_sign_out_from_elsewhere_is_refused(
    browser: httpx.AsyncClient, audit_data: AuditData
) -> None:
    await sign_in(browser, audit_data.tenant.reader)
    refused = await browser.post("/ui/sign-out", data={"csrf_token": "forged"})
    assert refused.status_code == 403
    assert (await browser.get("/ui/sessions")).status_code == 200


@pytest.mark.parametrize("key", ["wm_aaaaaaaa_" + "b" * 40, "not a key", ADMIN_TOKEN])
async def test_unknown_keys_and_the_operator_token_are_refused(
    browser: httpx.AsyncClient, key: str
) -> None:
    response = await sign_in(browser, key)
    assert response.status_code == 401
    assert "unknown, malformed or revoked" in response.text
    assert key not in response.text
    assert "workmem_ui_key" not in browser.cookies


async def test_a_reader_walks_from_the_sessions_to_the_diff(
    browser: httpx.AsyncClient, audit_data: AuditData
) -> None:
    key = audit_data.tenant.reader
    await sign_in(browser, key)
    pages: list[str] = []

    sessions = await browser.get("/ui/sessions")
    pages.append(sessions.text)
    assert f'href="/ui/sessions/{audit_data.billing}">billing</a>' in sessions.text
    assert f'href="/ui/sessions/{audit_data.support}">support</a>' in sessions.text
    assert "other" not in re.findall(r'">([a-z]+)</a></td>', sessions.text)

    timeline = await browser.get(f"/ui/sessions/{audit_data.billing}")
    pages.append(timeline.text)
    rows = re.findall(r'<tr id="archive-(\d+)">', timeline.text)
    assert rows == ["3", "2", "1"]
    second = timeline.text.split('<tr id="archive-2">')[1].split("</tr>")[0]
    assert "<code>open_issues_restored</code>" in second
    assert "<code>files_path_regression</code>" in second
    assert "llm_update" in second
    assert "<ins>" not in timeline.text, "diffs are on the archive pages only"

    archive = await browser.get(f"/ui/sessions/{audit_data.billing}/archives/2")
    pages.append(archive.text)
    sections = archive.text.split('<section class="section')[1:]
    assert len(sections) == 7
    files, issues = sections[4], sections[6]
    assert "Files &amp; Context" in files
    assert "<code>files_path_regression</code>" in files
    assert "lost_paths" in files
    assert "app/billing/models.py" in files
    assert "Unchanged." in files
    assert "<code>open_issues_restored</code>" in issues
    assert re.search(r"<ins><span class=\"sr\">added: </span>[^<]*\[silently dropped", issues)
    assert "<del>" in sections[6] or "<del>" in sections[1]
    assert 'href="/ui/sessions/' + audit_data.billing + '/archives/1">archive 1</a>' in archive.text
    # Each item's sources, expandable to the raw messages they name.
    state = sections[1]
    assert "Where each item came from" in state
    assert "Stripe client wired in; invoices next.</span>" in state
    assert "messages #3, #4</summary>" in state
    assert "billing round 2: carry on" in state
    assert "Working on round 2." in state
    assert "Where each item came from" not in sections[0], "an item without sources shows none"

    messages = await browser.get(f"/ui/sessions/{audit_data.billing}/archives/2/messages")
    pages.append(messages.text)
    assert "billing round 2: carry on" in messages.text
    assert "billing round 1" not in messages.text

    search = await browser.get(
        f"/ui/sessions/{audit_data.billing}/search", params={"q": "on-call rota"}
    )
    pages.append(search.text)
    assert re.findall(r'/archives/(\d+)">archive \d+</a>', search.text) == ["1", "3"]
    nothing = await browser.get(
        f"/ui/sessions/{audit_data.billing}/search", params={"q": "Weekend plans"}
    )
    assert "was never in this agent session" in nothing.text

    for page in pages:
        assert key not in page
        assert "http://" not in page, "no external resource"
        assert "https://" not in page, "no external resource"


async def test_pages_are_not_cached_framed_or_open_to_other_origins(
    browser: httpx.AsyncClient, audit_data: AuditData
) -> None:
    await sign_in(browser, audit_data.tenant.reader)
    page = await browser.get(f"/ui/sessions/{audit_data.billing}")
    assert page.headers["cache-control"] == "no-store"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    css = await browser.get("/ui/static/audit.css")
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")


async def test_another_tenant_gets_404_pages_not_the_data(
    browser: httpx.AsyncClient, audit_data: AuditData
) -> None:
    await sign_in(browser, audit_data.other.reader)
    sessions = await browser.get("/ui/sessions")
    assert audit_data.billing not in sessions.text
    assert ">other</a>" in sessions.text
    base = f"/ui/sessions/{audit_data.billing}"
    for path in (base, f"{base}/archives/2", f"{base}/archives/2/messages", f"{base}/search?q=a"):
        response = await browser.get(path)
        assert response.status_code == 404, path
        assert response.headers["content-type"].startswith("text/html")
        assert "<h1>Not found</h1>" in response.text
        assert "on-call rota" not in response.text
        assert "billing" not in response.text


@pytest.mark.parametrize(
    "path",
    ["/ui/sessions/not-a-uuid", "/ui/sessions/{billing}/archives/0", "/ui/sessions?cursor=%%%"],
)
async def test_malformed_addresses_answer_with_a_page(
    browser: httpx.AsyncClient, audit_data: AuditData, path: str
) -> None:
    await sign_in(browser, audit_data.tenant.reader)
    response = await browser.get(path.format(billing=audit_data.billing))
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("text/html")


async def test_a_long_timeline_is_paged(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    """55 archives: the newest 50 on the first page, then the 5 oldest; no diff anywhere."""
    agent_session_id = await create_session(client, tenant, external_id="long")
    for round_ in range(55):
        await append(client, tenant, agent_session_id, [user(f"step {round_} of app/x.py")])
        done = await commit(client, tenant, agent_session_id, keep_recent_count=0, wait=True)
        assert done.json()["status"] == "done"
    await sign_in(client, tenant.reader)
    try:
        first = await client.get(f"/ui/sessions/{agent_session_id}")
        rows = [int(n) for n in re.findall(r'<tr id="archive-(\d+)">', first.text)]
        assert rows == list(range(55, 5, -1))
        assert f'href="/ui/sessions/{agent_session_id}?before=6" rel="next"' in first.text
        assert 'rel="prev"' not in first.text
        older = await client.get(f"/ui/sessions/{agent_session_id}", params={"before": 6})
        assert re.findall(r'<tr id="archive-(\d+)">', older.text) == ["5", "4", "3", "2", "1"]
        assert 'rel="next"' not in older.text
        assert f'href="/ui/sessions/{agent_session_id}?before=56" rel="prev"' not in older.text
        assert f'href="/ui/sessions/{agent_session_id}" rel="prev"' in older.text
        assert "<ins>" not in first.text + older.text
    finally:
        client.cookies.clear()


async def test_api_docs_load_nothing_from_another_host(browser: httpx.AsyncClient) -> None:
    for page in ("/docs", "/redoc"):
        html = (await browser.get(page)).text
        references = re.findall(r'(?:src|href|url)\s*[=:]\s*[\'"]([^\'"]+)[\'"]', html)
        assert references, page
        for reference in references:
            assert not reference.startswith(("http:", "https:", "//")), (page, reference)
            assert (await browser.get(reference)).status_code == 200, (page, reference)
