"""The pages a new user opens first, in headless Chromium against the real server process: the
landing page at ``/``, and the four API docs pages, which must load nothing from other sites
and whose Authorize button must make "Try it out" succeed."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, Route, expect, sync_playwright

from tests.audit.browser import CHROMIUM_ARGS, require_chromium
from tests.support.servers import Server

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = require_chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def offline_page(browser: Browser, base_url: str) -> tuple[Page, list[str]]:
    """A page whose every request to another origin is refused, and recorded."""
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    foreign: list[str] = []

    def only_the_service(route: Route) -> None:
        url = route.request.url
        if url.startswith(base_url) or url.startswith("data:"):
            route.continue_()
        else:
            foreign.append(url)
            route.abort()

    page.route("**/*", only_the_service)
    return page, foreign


@pytest.mark.parametrize("path", ["/docs", "/api/v1/docs"])
def test_swagger_ui_renders_with_no_other_site(browser: Browser, server: Server, path: str) -> None:
    page, foreign = offline_page(browser, server.base_url)
    page.goto(f"{server.base_url}{path}")
    expect(page.locator(".opblock").first).to_be_visible()
    expect(page.get_by_role("button", name="Authorize")).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert foreign == []
    page.context.close()


@pytest.mark.parametrize("path", ["/redoc", "/api/v1/redoc"])
def test_redoc_renders_with_no_other_site(browser: Browser, server: Server, path: str) -> None:
    page, foreign = offline_page(browser, server.base_url)
    page.goto(f"{server.base_url}{path}")
    expect(page.get_by_role("heading", name="workmem", exact=False).first).to_be_visible()
    expect(page.get_by_text("Authorizations:").first).to_be_attached()
    page.wait_for_load_state("networkidle")
    assert foreign == []
    page.context.close()


@pytest.mark.parametrize(
    ("path", "operation"), [("/docs", "/v1/sessions"), ("/api/v1/docs", "/sessions")]
)
def test_authorize_then_try_it_out_answers_200(
    browser: Browser, server: Server, key: str, path: str, operation: str
) -> None:
    page, foreign = offline_page(browser, server.base_url)
    page.goto(f"{server.base_url}{path}")
    page.get_by_role("button", name="Authorize").first.click()
    dialog = page.locator(".modal-ux")
    dialog.locator("input").fill(key)
    dialog.get_by_role("button", name="Apply credentials").click()
    dialog.get_by_role("button", name="Close").click()

    block = page.locator(".opblock-get", has=page.locator(f'[data-path="{operation}"]')).first
    block.locator(".opblock-summary").click()
    block.get_by_role("button", name="Try it out").click()
    with page.expect_response(lambda answer: answer.request.method == "GET") as answered:
        block.get_by_role("button", name="Execute").click()
    response = answered.value
    assert response.request.headers.get("authorization") == f"Bearer {key}"
    assert response.status == 200
    expect(
        block.locator(".live-responses-table td.response-col_status:not(.col_header)")
    ).to_contain_text("200")
    assert foreign == []
    page.context.close()


def test_the_landing_page_leads_on(browser: Browser, server: Server) -> None:
    answer = httpx.get(f"{server.base_url}/", timeout=10)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")

    page, foreign = offline_page(browser, server.base_url)
    page.goto(f"{server.base_url}/")
    expect(page.get_by_role("heading", name="workmem")).to_be_visible()
    expect(page.get_by_text("Version 0.1.0")).to_be_visible()
    for name in ("Audit pages", "Liveness", "Readiness", "API reference (ReDoc)"):
        expect(page.get_by_role("link", name=name)).to_be_visible()
    page.get_by_role("link", name="Liveness").click()
    expect(page.get_by_text('"status":"ok"')).to_be_visible()
    page.go_back()
    page.get_by_role("link", name="API docs (Swagger UI)").click()
    expect(page.locator(".opblock").first).to_be_visible()
    assert foreign == []
    page.context.close()


def test_the_documents_declare_the_bearer_scheme(server: Server) -> None:
    for document in ("/openapi.json", "/api/v1/openapi.json"):
        body = httpx.get(f"{server.base_url}{document}", timeout=10).json()
        assert body["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
        secured = {
            (method, path): operation.get("security")
            for path, item in body["paths"].items()
            for method, operation in item.items()
        }
        assert all(
            security == [{"bearer": []}]
            for (method, path), security in secured.items()
            if path not in ("/healthz", "/readyz", "/metrics", "/health")
        ), secured
        assert all(
            secured.get(("get", path)) is None
            for path in ("/healthz", "/readyz", "/metrics", "/health")
        )
