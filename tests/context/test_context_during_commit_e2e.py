"""The context during a commit, against the real ``workmem serve`` process and its worker: while
several commits are in flight and the model is slow, readers poll the context of ``/v1`` and of
``/api/v1`` without pause, and every answer shows every message appended before it was asked
for, raw or covered by the working memory of a done archive; never missing in between."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fake_openai import DelayedReply, ErrorReply, FakeOpenAI
from tests.support.servers import Server

pytestmark = pytest.mark.e2e

ROUNDS = 5
PER_ROUND = 3
READERS = 2


@dataclass
class Appended:
    """What the writer has appended, recorded after each append was acknowledged."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    archive_of: dict[str, int] = field(default_factory=dict)
    seq_of: dict[str, int] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    done: bool = False

    def add(self, text: str, archive_seq: int, seq: int) -> None:
        with self.lock:
            self.order.append(text)
            self.archive_of[text] = archive_seq
            self.seq_of[text] = seq

    def snapshot(self) -> tuple[list[str], bool]:
        with self.lock:
            return list(self.order), self.done


@dataclass
class Seen:
    answers: int = 0
    most_in_flight: int = 0
    final: dict[str, Any] | None = None
    failures: list[str] = field(default_factory=list)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[httpx.Client]:
    # Every generation waits on the model, which then fails: the worker falls back to the
    # offline generator, so each archive stays in generating for a while and ends done.
    with FakeOpenAI(default_reply=DelayedReply(0.6, ErrorReply(500, "slow and down"))) as model:
        server = Server(
            tmp_path / "home",
            env={
                "WORKMEM_LLM_PROVIDER": "openai",
                "WORKMEM_LLM_API_KEY": "test-key",
                "WORKMEM_LLM_BASE_URL": model.base_url,
                "WORKMEM_LLM_FALLBACK": "offline",
                "WORKMEM_LLM_MAX_RETRIES": "0",
                "WORKMEM_MEMORY_EXTRACTOR": "off",
                "WORKMEM_WORKER_POLL_S": "0.1",
            },
        )
        try:
            server.wait_ready()
            key = (tmp_path / "home" / "local-api-key").read_text().strip()
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=server.base_url, headers=headers, timeout=60) as http:
                yield http
        finally:
            server.stop()


def _v1_writer(http: httpx.Client, sid: str, appended: Appended) -> None:
    for round_ in range(1, ROUNDS + 2):
        for index in range(PER_ROUND):
            text = f"v1 r{round_} m{index}"
            response = http.post(
                f"/v1/sessions/{sid}/messages", json={"role": "user", "content": text}
            )
            assert response.status_code == 201, response.text
            appended.add(text, round_, response.json()["message"]["seq"])
        if round_ <= ROUNDS:
            # The last round stays unarchived: appends continue after the commits.
            response = http.post(f"/v1/sessions/{sid}/commit", json={"keep_recent_count": 0})
            assert response.status_code == 202, response.text
            assert response.json()["archive"]["archive_seq"] == round_


def _ov_writer(http: httpx.Client, sid: str, appended: Appended) -> None:
    for round_ in range(1, ROUNDS + 2):
        for index in range(PER_ROUND):
            text = f"ov r{round_} m{index}"
            response = http.post(
                f"/api/v1/sessions/{sid}/messages", json={"role": "user", "content": text}
            )
            assert response.status_code == 200, response.text
            appended.add(text, round_, 0)
        if round_ <= ROUNDS:
            response = http.post(f"/api/v1/sessions/{sid}/commit", json={"keep_recent_count": 0})
            assert response.status_code == 200, response.text
            assert response.json()["result"]["archived"] is True


def _check_v1(context: dict[str, Any], required: list[str], appended: Appended) -> list[str]:
    working_memory = context["working_memory"]
    covered = working_memory["covered_end_seq"] if working_memory is not None else 0
    if working_memory is not None:
        statuses = {e["archive_seq"]: e["status"] for e in context["archive_index"]}
        if statuses.get(working_memory["archive_seq"], "done") != "done":
            return [f"summary from archive {working_memory['archive_seq']} that is not done"]
    included = set(context["stats"]["included_seqs"])
    raw = {m["content"] for m in context["messages"] if isinstance(m.get("content"), str)}
    missing = []
    for text in required:
        seq = appended.seq_of[text]
        if seq <= covered:
            continue
        if seq not in included or text not in raw:
            missing.append(f"{text} (seq {seq}; summary covers up to {covered})")
    return missing


def _check_ov(context: dict[str, Any], required: list[str], appended: Appended) -> list[str]:
    latest = context["latest_archive_id"]
    covered = int(latest.removeprefix("archive_")) if latest else 0
    if covered and not context["latest_archive_overview"]:
        return [f"{latest} named without its overview"]
    raw = {
        part["text"]
        for message in context["messages"]
        for part in message["parts"]
        if part.get("type") == "text"
    }
    return [
        f"{text} (archive {appended.archive_of[text]}; summary covers archive {covered})"
        for text in required
        if appended.archive_of[text] > covered and text not in raw
    ]


def _reader(
    http: httpx.Client,
    url: str,
    unwrap: Callable[[dict[str, Any]], dict[str, Any]],
    check: Callable[[dict[str, Any], list[str], Appended], list[str]],
    appended: Appended,
    seen: Seen,
    lock: threading.Lock,
    finished: Callable[[dict[str, Any]], bool],
) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        required, writer_done = appended.snapshot()
        response = http.get(url)
        if response.status_code != 200:
            with lock:
                seen.failures.append(f"{url}: {response.status_code} {response.text}")
            return
        context = unwrap(response.json())
        missing = check(context, required, appended)
        with lock:
            seen.answers += 1
            if "archive_index" in context:
                in_flight = sum(1 for e in context["archive_index"] if e["status"] != "done")
                seen.most_in_flight = max(seen.most_in_flight, in_flight)
            if missing:
                seen.failures.append(f"{url}: missing {missing}")
                return
            if writer_done and finished(context):
                seen.final = context
                return
    with lock:
        seen.failures.append(f"{url}: the archives did not finish")


def _run(
    http: httpx.Client,
    writer: Callable[[], None],
    appended: Appended,
    reader: Callable[[Seen, threading.Lock], None],
) -> Seen:
    seen, lock = Seen(), threading.Lock()
    readers = [
        threading.Thread(target=reader, args=(seen, lock), daemon=True) for _ in range(READERS)
    ]
    for thread in readers:
        thread.start()
    try:
        writer()
    finally:
        with appended.lock:
            appended.done = True
    for thread in readers:
        thread.join(240)
    assert not any(thread.is_alive() for thread in readers)
    assert seen.failures == [], seen.failures
    return seen


def test_v1_context_never_loses_messages_while_archives_generate(served: httpx.Client) -> None:
    created = served.post("/v1/sessions", json={"external_id": "during"})
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    appended = Appended()
    last = ROUNDS * PER_ROUND

    def reader(seen: Seen, lock: threading.Lock) -> None:
        _reader(
            served,
            f"/v1/sessions/{sid}/context",
            lambda body: body,
            _check_v1,
            appended,
            seen,
            lock,
            lambda c: (
                c["working_memory"] is not None and c["working_memory"]["covered_end_seq"] == last
            ),
        )

    seen = _run(served, lambda: _v1_writer(served, sid, appended), appended, reader)
    assert seen.final is not None
    # Several commits were in flight at once while the readers polled.
    assert seen.most_in_flight >= 2, seen.most_in_flight
    assert seen.answers > ROUNDS
    assert [m["content"] for m in seen.final["messages"][1:]] == appended.order[last:]


def test_openviking_context_never_loses_messages_while_archives_generate(
    served: httpx.Client,
) -> None:
    assert served.post("/api/v1/sessions", json={"session_id": "during"}).status_code == 200
    appended = Appended()

    def reader(seen: Seen, lock: threading.Lock) -> None:
        _reader(
            served,
            "/api/v1/sessions/during/context",
            lambda body: dict(body["result"]),
            _check_ov,
            appended,
            seen,
            lock,
            lambda c: c["latest_archive_id"] == f"archive_{ROUNDS:03d}",
        )

    seen = _run(served, lambda: _ov_writer(served, "during", appended), appended, reader)
    assert seen.final is not None
    assert seen.answers > ROUNDS
    texts = [part["text"] for m in seen.final["messages"] for part in m["parts"]]
    assert texts == appended.order[ROUNDS * PER_ROUND :]
