"""The /ui pages in headless Chromium against the real server process: sign in, follow the
timeline to the archive whose Open Issues were restored and whose Files update was rejected,
find the badges and the diff, and see that another tenant's key sees none of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from app.llm.fakes import tool_call
from tests.audit.browser import CHROMIUM_ARGS, ServedDatabase, require_chromium
from tests.audit.fixtures import AuditData, append_items, created, keep_all, session_with
from tests.conftest import TenantKeys

pytestmark = pytest.mark.e2e


# One line in Key Facts (the last line of a section carries no line break), then an APPEND of
# four items: the first line is unchanged, and must not read as removed and added again.
APPENDED_SCRIPT = [
    created(
        "# Working Memory\n\n## Session Title\nDocs pass\n\n## Current State\nStarted.\n\n"
        "## Task & Goals\n- Write the guides\n\n## Key Facts & Decisions\n- The guides are in "
        "docs\n\n## Files & Context\n\n## Errors & Corrections\n\n## Open Issues\n"
    ),
    tool_call(
        keep_all(
            KEY_FACTS=append_items(
                "Examples run as written",
                "Every page works offline",
                "The landing page links the docs",
                "Errors are one line",
            )
        )
    ),
]


@pytest.fixture(scope="module")
def appended(audit_data: AuditData) -> tuple[TenantKeys, str]:
    """An agent session (in a tenant of its own) whose second archive appends to Key Facts."""
    return session_with(audit_data, "docs-pass", APPENDED_SCRIPT)


@pytest.fixture(scope="module")
def server(
    audit_data: AuditData,
    appended: tuple[TenantKeys, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    served = ServedDatabase(audit_data.url, tmp_path_factory.mktemp("ui-serve"))
    try:
        served.wait_ready()
        yield served.base_url
    finally:
        log = served.stop()
    assert audit_data.tenant.reader not in log
    assert audit_data.other.reader not in log


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = require_chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def sign_in(page: Page, server: str, key: str) -> None:
    page.goto(f"{server}/ui")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Agent sessions")).to_be_visible()


def test_follow_the_timeline_to_the_guarded_archive(
    browser: Browser, server: str, audit_data: AuditData, tmp_path: Path
) -> None:
    key = audit_data.tenant.reader
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    visited: list[str] = []
    page.on("framenavigated", lambda frame: visited.append(frame.url))
    sign_in(page, server, key)

    page.get_by_role("link", name="billing", exact=True).click()
    expect(page.get_by_role("heading", name="Agent session billing")).to_be_visible()
    row = page.locator("#archive-2")
    expect(row.locator(".badge", has_text="open_issues_restored")).to_be_visible()
    expect(row.locator(".badge", has_text="files_path_regression")).to_be_visible()
    row.get_by_role("link", name="Archive 2").click()

    expect(page.get_by_role("heading", name="Archive 2")).to_be_visible()
    issues = page.locator("section", has=page.get_by_role("heading", name="Open Issues"))
    expect(issues.locator(".badge", has_text="open_issues_restored")).to_be_visible()
    expect(issues.locator("ins", has_text="[silently dropped, restored]")).to_be_visible()
    files = page.locator("section", has=page.get_by_role("heading", name="Files & Context"))
    expect(files.locator(".badge", has_text="files_path_regression")).to_be_visible()
    files.get_by_text("Details").click()
    expect(files.locator(".details li", has_text="app/billing/models.py")).to_be_visible()
    state = page.locator("section", has=page.get_by_role("heading", name="Current State"))
    state.get_by_text("Where each item came from").click()
    state.get_by_text("messages #3, #4").click()
    expect(
        state.locator(".item-messages .message", has_text="billing round 2: carry on")
    ).to_be_visible()
    title = page.locator("section", has=page.get_by_role("heading", name="Session Title"))
    expect(title.locator(".badge", has_text="title_no_overlap")).to_be_visible()
    screenshot = tmp_path / "archive-2.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.stat().st_size > 10_000

    cookie = next(c for c in context.cookies() if c["name"] == "workmem_ui_key")
    assert (cookie["httpOnly"], cookie["sameSite"], cookie["path"]) == (True, "Strict", "/ui")
    assert "workmem_ui_key" not in page.evaluate("document.cookie"), "scripts cannot read it"

    page.get_by_role("link", name="read the raw messages").click()
    expect(page.get_by_text("billing round 2: carry on")).to_be_visible()
    page.go_back()

    page.get_by_role("link", name="billing").first.click()
    page.get_by_label("When did this text enter and leave each section?").fill("on-call rota")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("link", name="archive 1")).to_be_visible()
    expect(page.get_by_role("link", name="archive 3")).to_be_visible()
    assert key not in page.content()

    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(f"{server}/ui/sessions/{audit_data.billing}")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(tmp_path / "timeline-phone.png"), full_page=True)

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert not [c for c in context.cookies() if c["name"] == "workmem_ui_key"]
    assert all(key not in url for url in visited)
    context.close()


def test_another_tenant_sees_none_of_it(
    browser: Browser, server: str, audit_data: AuditData
) -> None:
    context = browser.new_context()
    page = context.new_page()
    sign_in(page, server, audit_data.other.reader)
    expect(page.get_by_role("link", name="other", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="billing")).to_have_count(0)
    for path in ("", "/archives/2", "/archives/2/messages", "/search?q=rota"):
        response = page.goto(f"{server}/ui/sessions/{audit_data.billing}{path}")
        assert response is not None
        assert response.status == 404, path
        expect(page.get_by_role("heading", name="Not found")).to_be_visible()
        assert "on-call" not in page.content()
    context.close()


def test_an_append_a_caption_and_the_breadcrumb_read_right(
    browser: Browser, server: str, appended: tuple[TenantKeys, str]
) -> None:
    keys, agent_session_id = appended
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    sign_in(page, server, keys.reader)

    # A caption is the table's title, above its header row, not a row under it.
    caption = page.locator("table.stack caption")
    header = page.locator("table.stack thead")
    expect(caption).to_have_text("Agent sessions of your tenant, oldest first")
    caption_box, header_box = caption.bounding_box(), header.bounding_box()
    assert caption_box is not None
    assert header_box is not None
    assert caption_box["y"] + caption_box["height"] <= header_box["y"] + 1
    assert caption.evaluate("e => getComputedStyle(e).display") == "table-caption"

    page.goto(f"{server}/ui/sessions/{agent_session_id}/archives/2")
    facts = page.locator("section", has=page.get_by_role("heading", name="Key Facts & Decisions"))
    expect(facts.locator("ins", has_text="Examples run as written")).to_be_visible()
    expect(facts.get_by_text("The guides are in docs")).to_be_visible()
    expect(facts.locator("del")).to_have_count(0)

    page.get_by_role("link", name="read the raw messages").click()
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    expect(crumbs.get_by_role("link", name="docs-pass")).to_be_visible()
    expect(crumbs.get_by_role("link", name="Agent session", exact=True)).to_have_count(0)
    crumbs.get_by_role("link", name="docs-pass").click()
    expect(page.get_by_role("heading", name="Agent session docs-pass")).to_be_visible()
    context.close()
