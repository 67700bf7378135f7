"""Webhooks end to end: the real ``workmem serve`` process delivers a signed ``archive.done`` to
a loopback endpoint (allowed by ``WORKMEM_WEBHOOKS_ALLOW_PRIVATE``), which verifies it with the
``standardwebhooks`` package, as a receiver would."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from standardwebhooks import Webhook

from tests.support.servers import Server
from tests.support.webhook_receiver import WebhookReceiver
from workmem_client import WorkmemClient

pytestmark = pytest.mark.e2e


def test_serve_delivers_a_signed_archive_done(
    tmp_path: Path, receiver: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKMEM_WEBHOOKS_ALLOW_PRIVATE", "true")
    monkeypatch.setenv("WORKMEM_WEBHOOKS_POLL_S", "0.2")
    server = Server(tmp_path / "home")
    try:
        server.wait_ready()
        key = (tmp_path / "home" / "local-api-key").read_text().strip()
        with WorkmemClient(server.base_url, key, timeout_s=30) as workmem:
            webhook = workmem.create_webhook(receiver.url, ["archive.done"])
            created = workmem.create_session(external_id="hooked")
            workmem.append(created.id, {"role": "user", "content": "Ship app/cli.py today."})
            committed = workmem.commit(created.id, keep_recent_count=0, wait=True)
            assert committed.status == "done"
            [request] = receiver.wait_for(1)
            event = Webhook(webhook.secret).verify(request.body, dict(request.headers))
            assert event["type"] == "archive.done"
            assert event["data"]["agent_session_id"] == str(created.id)
            assert event["data"]["archive_seq"] == 1
            page = workmem.webhook_deliveries(webhook.id)
            for _ in range(50):
                if page.items[0].status == "delivered":
                    break
                time.sleep(0.1)
                page = workmem.webhook_deliveries(webhook.id)
            [delivery] = page.items
            assert delivery.status == "delivered"
            assert delivery.event_id == request.headers["webhook-id"]
            assert [(a.attempt, a.status_code) for a in delivery.attempts] == [(1, 200)]
    finally:
        server.stop()
