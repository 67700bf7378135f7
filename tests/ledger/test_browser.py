"""The ledger's /ui page in headless Chromium against the real ``workmem serve``: from an agent
session's timeline to its recorded contexts, to what the model saw, and on to the archive its
summary came from and the raw message fill repeated."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect, sync_playwright

from tests.audit.browser import CHROMIUM_ARGS, require_chromium
from tests.support.servers import Server

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str, str]]:
    """The server, its key, and an agent session with one recorded context."""
    home = tmp_path_factory.mktemp("ledger-ui") / "home"
    server = Server(home, env={"WORKMEM_WORKER_POLL_S": "0.1"})
    try:
        server.wait_ready()
        key = (home / "local-api-key").read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=60) as http:
            sid = http.post("/v1/sessions", json={"external_id": "lyon"}).json()["id"]
            batch = [
                {"role": "user", "content": "Ship the Lyon order on Monday."},
                {"role": "assistant", "content": "Scheduled for Monday."},
            ]
            assert http.post(f"/v1/sessions/{sid}/messages:batch", json={"messages": batch})
            done = http.post(
                f"/v1/sessions/{sid}/commit", json={"keep_recent_count": 0, "wait": True}
            )
            assert done.json()["archive"]["status"] == "done", done.text
            http.post(
                f"/v1/sessions/{sid}/messages",
                json={"role": "user", "content": "Any news about the Lyon truck?"},
            )
            context = http.get(
                f"/v1/sessions/{sid}/context",
                params={"record": "true", "fill": "true", "token_budget": 4000},
            ).json()
        yield server.base_url, key, sid, context["context_id"]
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = require_chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def test_from_the_timeline_to_what_the_model_saw_and_its_parts(
    browser: Browser, served: tuple[str, str, str, str], tmp_path: Path
) -> None:
    base_url, key, sid, context_id = served
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{base_url}/ui")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Agent sessions")).to_be_visible()
    page.get_by_role("link", name="lyon", exact=True).click()
    page.get_by_role("link", name="Recorded contexts").click()
    expect(page.get_by_role("heading", name="Recorded contexts")).to_be_visible()
    page.locator(f'a[href="/ui/sessions/{sid}/contexts/{context_id}"]').click()

    expect(page.get_by_role("heading", name="What the model saw")).to_be_visible()
    expect(page.locator("#verdict")).to_contain_text("Rebuilt byte for byte")
    expect(page.locator(".part-summary")).to_contain_text("[Session History Summary]")
    expect(page.locator(".part-tail")).to_contain_text("Any news about the Lyon truck?")
    page.screenshot(path=str(tmp_path / "seen.png"), full_page=True)

    page.get_by_role("link", name="Message #1 (repeated by fill)").click()
    expect(page.get_by_role("heading", name="Raw messages of archive 1")).to_be_visible()
    expect(page.locator("#m1")).to_contain_text("Ship the Lyon order on Monday.")
    page.go_back()
    page.get_by_role("link", name="Working memory after archive 1", exact=True).click()
    expect(page.get_by_role("heading", name="Archive 1")).to_be_visible()
    context.close()
