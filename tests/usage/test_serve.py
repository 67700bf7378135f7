"""What the models cost, end to end: the real ``workmem serve`` process, its chat and embedding
models the scripted OpenAI-compatible server, and the tokens that server reports landing in
``model_calls``, the usage route, ``/metrics`` and the ``/ui/usage`` page (headless Chromium)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest
from playwright.sync_api import Browser, expect, sync_playwright

from tests.audit.browser import CHROMIUM_ARGS, require_chromium
from tests.support.clusters import cluster_url
from tests.support.fake_openai import FakeOpenAI, ToolCallReply
from tests.support.servers import Server

pytestmark = pytest.mark.e2e

CHAT_MODEL = "gpt-usage-test"
EMBEDDING_MODEL = "embed-usage-test"
MEMORY = "The user prefers green tea to coffee."


@dataclass
class Served:
    http: httpx.Client
    server: Server
    key: str
    agent_session_id: str


def creation(prompt_tokens: int, completion_tokens: int) -> ToolCallReply:
    markdown = "# Working Memory\n\n## Session Title\nTea\n\n## Current State\nTalking about tea.\n"
    return ToolCallReply(
        json.dumps({"markdown": markdown}),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


def extraction(prompt_tokens: int, completion_tokens: int) -> ToolCallReply:
    memory = {"category": "preference", "content": MEMORY, "confidence": 0.9, "source_seqs": [1]}
    return ToolCallReply(
        json.dumps({"memories": [memory]}),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


def wait_for_calls(http: httpx.Client, count: int) -> dict[str, Any]:
    """The usage report once it counts ``count`` calls (rows are written in the background)."""
    deadline = time.monotonic() + 30
    while True:
        body: dict[str, Any] = http.get("/v1/usage/models").json()
        if body["totals"]["calls"] >= count or time.monotonic() > deadline:
            return body
        time.sleep(0.1)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("usage") / "home"
    with FakeOpenAI(embedding_dim=384) as model:
        server = Server(
            home,
            env={
                "WORKMEM_LLM_PROVIDER": "openai",
                "WORKMEM_LLM_API_KEY": "test-key",
                "WORKMEM_LLM_BASE_URL": model.base_url,
                "WORKMEM_LLM_MODEL": CHAT_MODEL,
                "WORKMEM_LLM_MAX_RETRIES": "0",
                "WORKMEM_MEMORY_EXTRACTOR": "model",
                "WORKMEM_EMBEDDING_PROVIDER": "openai",
                "WORKMEM_EMBEDDING_MODEL": EMBEDDING_MODEL,
            },
        )
        try:
            server.wait_ready()
            key = (home / "local-api-key").read_text().strip()
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=server.base_url, headers=headers, timeout=60) as http:
                sid = http.post("/v1/sessions", json={"external_id": "tea"}).json()["id"]
                said = http.post(
                    f"/v1/sessions/{sid}/messages",
                    json={"role": "user", "content": "I prefer green tea to coffee."},
                )
                assert said.status_code == 201, said.text
                model.push(creation(1200, 80), extraction(300, 40))
                done = http.post(
                    f"/v1/sessions/{sid}/commit", json={"keep_recent_count": 0, "wait": True}
                )
                assert done.json()["status"] == "done", done.text
                found = http.get("/v1/memories/search", params={"q": "tea"})
                assert found.status_code == 200, found.text
                yield Served(http, server, key, sid)
        finally:
            server.stop()


def test_each_call_is_a_row_with_the_tokens_the_model_reported(served: Served) -> None:
    wait_for_calls(served.http, 4)
    url = cluster_url(served.server.home / "pgdata", "workmem")
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT purpose, model, input_tokens, output_tokens, outcome,"
            " agent_session_id::text, archive_seq, latency_ms >= 0 FROM model_calls"
            " ORDER BY created_at"
        ).fetchall()
    session = served.agent_session_id
    assert rows == [
        ("wm_create", CHAT_MODEL, 1200, 80, "ok", session, 1, True),
        ("extraction", CHAT_MODEL, 300, 40, "ok", session, 1, True),
        # The scripted server counts an input's words as its tokens.
        ("embedding", EMBEDDING_MODEL, len(MEMORY.split()), 0, "ok", session, 1, True),
        ("query_embedding", EMBEDDING_MODEL, 1, 0, "ok", None, None, True),
    ]


def test_the_usage_route_adds_them_up_by_day_and_model(served: Served) -> None:
    body = wait_for_calls(served.http, 4)
    today = datetime.now(UTC).date().isoformat()
    assert body["to"] == today
    assert [(item["day"], item["model"]) for item in body["items"]] == [
        (today, EMBEDDING_MODEL),
        (today, CHAT_MODEL),
    ]
    chat, embedding = body["items"][1], body["items"][0]
    assert (chat["calls"], chat["input_tokens"], chat["output_tokens"]) == (2, 1500, 120)
    assert (chat["errors"], chat["refused"]) == (0, 0)
    assert (embedding["calls"], embedding["input_tokens"]) == (2, len(MEMORY.split()) + 1)
    assert body["totals"]["input_tokens"] == 1500 + len(MEMORY.split()) + 1
    yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    before = served.http.get("/v1/usage/models", params={"from": yesterday, "to": yesterday})
    assert before.json()["items"] == []
    assert before.json()["totals"]["calls"] == 0


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"from": "2026-12-02", "to": "2026-12-01"}, "from"),
        ({"from": "2025-01-01", "to": "2026-01-02"}, "from"),
        ({"from": "yesterday"}, "from"),
        ({"to": "2026-13-01"}, "to"),
    ],
)
def test_a_bad_range_is_a_problem(served: Served, params: dict[str, str], where: str) -> None:
    answer = served.http.get("/v1/usage/models", params=params)
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert [error["loc"] for error in answer.json()["errors"]] == [["query", where]]


def test_a_year_at_most_is_one_range(served: Served) -> None:
    answer = served.http.get("/v1/usage/models", params={"from": "2025-01-02", "to": "2026-01-02"})
    assert answer.status_code == 200, answer.text


def test_the_metrics_count_tokens_by_model_and_purpose(served: Served) -> None:
    wait_for_calls(served.http, 4)
    text = httpx.get(f"{served.server.base_url}/metrics").text
    expected = [
        f'workmem_model_tokens_total{{direction="input",model="{CHAT_MODEL}",purpose="wm_create"}}'
        " 1200.0",
        f'workmem_model_tokens_total{{direction="output",model="{CHAT_MODEL}",purpose="extraction"}}'
        " 40.0",
        'workmem_model_calls_total{outcome="ok",purpose="query_embedding"} 1.0',
    ]
    assert [line for line in expected if line not in text] == []


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = require_chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def test_the_usage_page_charts_the_tokens_per_day(browser: Browser, served: Served) -> None:
    wait_for_calls(served.http, 4)
    base = served.server.base_url
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    foreign: list[str] = []
    page.on(
        "request",
        lambda request: None if request.url.startswith(base) else foreign.append(request.url),
    )
    page.goto(f"{base}/ui")
    page.get_by_label("API key").fill(served.key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Agent sessions")).to_be_visible()
    page.get_by_role("link", name="Model usage").click()
    expect(page.get_by_role("heading", name="Model usage")).to_be_visible()
    today = datetime.now(UTC).date().isoformat()
    row = page.get_by_role("row").filter(has_text=CHAT_MODEL)
    expect(row).to_contain_text(today)
    expect(row).to_contain_text("1500")
    expect(row).to_contain_text("120")
    bar = page.locator(f'svg g.day[data-day="{today}"]')
    expect(bar).to_have_attribute("data-input-tokens", str(1500 + len(MEMORY.split()) + 1))
    expect(bar).to_have_attribute("data-output-tokens", "120")
    assert bar.locator("rect").first.bounding_box() is not None
    assert len(page.locator("svg g.day").all()) == 30
    assert foreign == []
