"""The pure rules of webhooks: which destinations are refused, what follows an attempt, and the
Standard Webhooks signature a receiver verifies."""

from __future__ import annotations

import ipaddress
import json
import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from app.webhooks.destinations import DestinationRefused, kind_of, refusal, target, vet
from app.webhooks.events import envelope, memory_data, message_id
from app.webhooks.schedule import Next, RetrySchedule, after_attempt
from app.webhooks.signing import new_secret, signed_headers


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("93.184.216.34", None),
        ("2606:2800:220:1:248:1893:25c8:1946", None),
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("172.32.0.1", None),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("100.64.0.1", "not globally routable"),
        ("0.0.0.0", "unspecified"),  # noqa: S104 - an address under test, not a bind
        ("224.0.0.1", "multicast"),
        ("240.0.0.1", "private"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:8.8.8.8", None),
        # 6to4 (2002::/16) and NAT64 (64:ff9b::/96) carry an IPv4 address a relay reaches.
        ("2002:7f00:1::", "loopback"),
        ("2002:7f00:0001:0:0:0:0:1", "loopback"),
        ("2002:a9fe:a9fe::", "link-local"),
        ("2002:a00:1::", "private"),
        ("2002:c0a8:101::", "private"),
        ("2002:0:0::", "unspecified"),
        ("2002:5db8:d822::", None),
        ("64:ff9b::7f00:1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "link-local"),
        ("64:ff9b::5db8:d822", None),
    ],
)
def test_kind_of_address(address: str, kind: str | None) -> None:
    assert kind_of(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://hooks.example.com/in", ("hooks.example.com", 443)),
        ("http://hooks.example.com/in", ("hooks.example.com", 80)),
        ("http://127.0.0.1:9000/in", ("127.0.0.1", 9000)),
        ("https://[::1]:8443/x", ("::1", 8443)),
    ],
)
def test_target(url: str, expected: tuple[str, int]) -> None:
    assert target(url) == expected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://hooks.example.com/in", "http:// or https://"),
        ("hooks.example.com/in", "http:// or https://"),
        ("https://user:pass@hooks.example.com/in", "credentials"),
        ("https:///in", "no host"),
        ("https://hooks.example.com:99999/in", "port"),
        ("https://hooks.example.com:0/in", "port 0"),
        ("http://[2002:7f00:1::]:0/", "port 0"),
        ("http://[::1/in", "not valid"),
    ],
)
def test_urls_a_webhook_cannot_use(url: str, message: str) -> None:
    with pytest.raises(DestinationRefused, match=message):
        target(url)


def test_refusal_checks_every_address() -> None:
    assert refusal("h", ["93.184.216.34"], allow_private=False) is None
    mixed = refusal("h", ["93.184.216.34", "10.0.0.7"], allow_private=False)
    assert mixed is not None
    assert "10.0.0.7, a private address" in mixed
    assert "WORKMEM_WEBHOOKS_ALLOW_PRIVATE" in mixed
    assert refusal("h", ["10.0.0.7", "127.0.0.1"], allow_private=True) is None
    assert refusal("h", ["fe80::1%eth0"], allow_private=False) is not None
    assert refusal("h", [], allow_private=True) == "h does not resolve to any address"


async def test_vet_resolves_before_it_decides() -> None:
    asked: list[tuple[str, int]] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return ["192.168.0.10"]

    with pytest.raises(DestinationRefused, match=re.escape("192.168.0.10, a private address")):
        await vet("https://internal.example/x", allow_private=False, resolver=resolver)
    await vet("https://internal.example/x", allow_private=True, resolver=resolver)
    assert asked == [("internal.example", 443)] * 2
    # The real resolver: a literal address is itself; a name IDNA refuses resolves to nothing.
    with pytest.raises(DestinationRefused, match="loopback"):
        await vet("http://127.0.0.1:1/x", allow_private=False)
    with pytest.raises(DestinationRefused, match="does not resolve"):
        await vet("http://" + "a" * 70 + ".example/x", allow_private=True)


SCHEDULE = RetrySchedule(max_attempts=3, base_s=5.0, max_s=12.0)


@pytest.mark.parametrize(
    ("status_code", "attempt", "expected"),
    [
        (200, 1, Next("delivered", None)),
        (204, 3, Next("delivered", None)),
        (299, 1, Next("delivered", None)),
        (300, 1, Next("pending", 5.0)),
        (301, 1, Next("pending", 5.0)),
        (199, 1, Next("pending", 5.0)),
        (500, 1, Next("pending", 5.0)),
        (None, 1, Next("pending", 5.0)),
        (500, 2, Next("pending", 10.0)),
        # Below, at and above max_attempts.
        (500, 3, Next("failed", None)),
        (500, 4, Next("failed", None)),
        (410, 3, Next("failed", None)),
    ],
)
def test_after_attempt(status_code: int | None, attempt: int, expected: Next) -> None:
    assert after_attempt(status_code, attempt, SCHEDULE) == expected


@pytest.mark.parametrize(
    ("attempt", "jitter", "delay"),
    [(1, 1.0, 5.0), (2, 1.0, 10.0), (3, 1.0, 12.0), (9, 1.0, 12.0), (2, 0.8, 8.0), (2, 1.2, 12.0)],
)
def test_backoff_doubles_up_to_its_cap(attempt: int, jitter: float, delay: float) -> None:
    assert SCHEDULE.backoff_s(attempt, jitter) == pytest.approx(delay)


def test_a_signed_delivery_verifies_with_the_standard_webhooks_package() -> None:
    secret = new_secret()
    assert secret.startswith("whsec_")
    assert secret != new_secret()
    sent_at = datetime.now(UTC)
    event = message_id(uuid.UUID(int=7))
    body = json.dumps(envelope("archive.done", sent_at, {"archive_seq": 1}))
    headers = signed_headers(secret, event, sent_at, body)
    assert headers["webhook-id"] == "msg_" + "0" * 31 + "7"
    assert headers["webhook-timestamp"] == str(int(sent_at.timestamp()))
    assert headers["webhook-signature"].startswith("v1,")
    verified = Webhook(secret).verify(body, headers)
    assert verified == {
        "type": "archive.done",
        "timestamp": sent_at.isoformat(),
        "data": {"archive_seq": 1},
    }
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body.replace('"archive_seq": 1', '"archive_seq": 2'), headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(body, headers)
    stale = signed_headers(secret, event, sent_at - timedelta(minutes=6), body)
    with pytest.raises(WebhookVerificationError, match="too old"):
        Webhook(secret).verify(body, stale)


def test_memory_data_counts_each_kind_of_change() -> None:
    first, second = uuid.UUID(int=1), uuid.UUID(int=2)
    data = memory_data(
        user_id="u", changes=[("ADD", first), ("SUPERSEDE", second), ("ADD", second)]
    )
    assert data["counts"] == {"ADD": 2, "SUPERSEDE": 1}
    assert data["changes"][1] == {"event": "SUPERSEDE", "memory_id": str(second)}
    assert data["agent_session_id"] is None
