"""Benchmark of the /ui pages of an agent session with 200 archives, in a real browser.

Prints JSON: the median page load (navigation start to the load event, in headless Chromium
against a real ``workmem serve``) of the timeline, an archive page and the text search, for an
agent session of 200 archives and one of 60 (both fill a timeline page of 50), their ratio (the
timeline is paged: about 1; an archive page grows with that archive's working memory, the search
with the agent session's history), and the raw Postgres query of a timeline page (50 archive rows
by primary key) measured in the same run for reference. The archives are made by real commits
with the offline extractor. Without
/usr/bin/chromium the browser figures are null and only the HTTP figures are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from sqlalchemy.engine import make_url

from app.config import Settings
from app.db import Database
from app.main import create_app
from app.tenancy import service as tenancy
from app.tenancy.principal import Role
from tests.audit.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.postgres import PostgresForTests
from tests.support.servers import free_port, workmem_command

ROUNDS = 15


async def build(url: str, archives: tuple[int, ...]) -> tuple[str, dict[int, str]]:
    """A reader key and one agent session per archive count, made by real commits."""
    from asgi_lifespan import LifespanManager

    database = Database.from_url(url, pool_size=4)
    async with database.unscoped() as db:
        tenant = await tenancy.create_tenant(db, "bench-ui")
        _, writer = await tenancy.issue_key(db, tenant.tenant_id, role=Role.WRITER)
        _, reader = await tenancy.issue_key(db, tenant.tenant_id, role=Role.READER)
    app = create_app(Settings(database_url=url, worker_enabled=False), database=database)
    headers = {"Authorization": f"Bearer {writer}"}
    sessions: dict[int, str] = {}
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://bench"
        ) as http,
    ):
        for count in archives:
            created = await http.post("/v1/sessions", json={}, headers=headers)
            agent_session_id = created.json()["id"]
            for n in range(count):
                messages = [
                    {
                        "role": "user",
                        "content": f"Step {n}: fix app/module_{n % 17}.py, never "
                        f"touch prod. Why does test_{n} fail?",
                    },
                    {
                        "role": "assistant",
                        "content": f"Traceback ends in KeyError: k{n}. "
                        f"Decided to add a default on 2026-11-{n % 28 + 1:02d}.",
                    },
                ]
                await http.post(
                    f"/v1/sessions/{agent_session_id}/messages:batch",
                    json={"messages": messages},
                    headers=headers,
                )
                done = await http.post(
                    f"/v1/sessions/{agent_session_id}/commit",
                    json={"keep_recent_count": 0, "wait": True},
                    headers=headers,
                )
                assert done.json()["status"] == "done", done.text
            sessions[count] = agent_session_id
    await database.dispose()
    return reader, sessions


def raw_timeline_query_ms(url: str, agent_session_id: str) -> float:
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    samples = []
    with psycopg.connect(plain) as connection:
        for _ in range(ROUNDS * 3):
            started = time.perf_counter()
            connection.execute(
                "SELECT * FROM archives WHERE agent_session_id = %s"
                " ORDER BY archive_seq DESC LIMIT 50",
                (agent_session_id,),
            ).fetchall()
            samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def serve(url: str, home: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKMEM_")}
    env.update(
        DATABASE_URL=url,
        WORKMEM_HOME=str(home),
        WORKMEM_WORKER_ENABLED="false",
        WORKMEM_LOG_LEVEL="WARNING",
    )
    process = subprocess.Popen(
        [*workmem_command(), "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return process, base
        except httpx.TransportError:
            time.sleep(0.2)
    process.terminate()
    raise SystemExit("the server did not start")


def pages(agent_session_id: str, archives: int) -> dict[str, str]:
    base = f"/ui/sessions/{agent_session_id}"
    return {
        "timeline": base,
        "timeline_oldest_page": f"{base}?before=51" if archives > 50 else base,
        "archive": f"{base}/archives/{archives}",
        "search": f"{base}/search?q=KeyError",
    }


def http_ms(base: str, reader: str, path: str) -> tuple[float, int]:
    samples = []
    with httpx.Client(base_url=base, timeout=30) as http:
        form = http.get("/ui/sign-in").text
        token = form.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
        http.post("/ui/sign-in", data={"api_key": reader, "csrf_token": token})
        size = len(http.get(path).content)
        for _ in range(ROUNDS):
            started = time.perf_counter()
            assert http.get(path).status_code == 200
            samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000, size


def browser_ms(base: str, reader: str, paths: dict[str, str]) -> dict[str, float] | None:
    if not CHROMIUM.exists():
        return None
    from playwright.sync_api import sync_playwright

    loads: dict[str, float] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(f"{base}/ui/sign-in")
        page.get_by_label("API key").fill(reader)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/ui/sessions")
        for name, path in paths.items():
            samples = []
            for _ in range(ROUNDS):
                page.goto(f"{base}{path}", wait_until="load")
                timing: dict[str, Any] = page.evaluate(
                    "JSON.parse(JSON.stringify(performance.getEntriesByType('navigation')[0]))"
                )
                samples.append(timing["loadEventEnd"] - timing["startTime"])
            loads[name] = round(statistics.median(samples), 1)
        browser.close()
    return loads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--archives", type=int, default=200)
    parser.add_argument("--short", type=int, default=60, help="archives of the comparison")
    args = parser.parse_args()
    counts = (args.short, args.archives)
    postgres = PostgresForTests.start()
    try:
        url = postgres.create_app_database("wmbenchui").app
        started = time.perf_counter()
        reader, sessions = asyncio.run(build(url, counts))
        build_s = time.perf_counter() - started
        raw_ms = raw_timeline_query_ms(url, sessions[args.archives])
        with tempfile.TemporaryDirectory() as home:
            process, base = serve(url, Path(home))
            try:
                report: dict[str, Any] = {
                    "archives": args.archives,
                    "commits_to_build_s": round(build_s, 1),
                    "raw_timeline_query_ms": round(raw_ms, 3),
                }
                for count in counts:
                    paths = pages(sessions[count], count)
                    http = {name: http_ms(base, reader, path) for name, path in paths.items()}
                    report[f"{count}_archives"] = {
                        "http_ms": {name: round(ms, 1) for name, (ms, _) in http.items()},
                        "html_bytes": {name: size for name, (_, size) in http.items()},
                        "browser_load_ms": browser_ms(base, reader, paths),
                    }
                long = report[f"{args.archives}_archives"]
                short = report[f"{args.short}_archives"]
                report["ratio_http_long_vs_short"] = {
                    name: round(long["http_ms"][name] / short["http_ms"][name], 2)
                    for name in long["http_ms"]
                }
                report["ratio_timeline_http_vs_raw_query"] = round(
                    long["http_ms"]["timeline"] / raw_ms, 1
                )
            finally:
                process.terminate()
                process.wait(timeout=30)
        print(json.dumps(report, indent=2))
    finally:
        postgres.stop()


if __name__ == "__main__":
    main()
