"""An attempt connects to the address it vetted, whatever the name resolves to a moment later
(DNS rebinding), keeps verifying HTTPS certificates against the host name, and records errors
too coarse to map another network with. Every name is resolved by a resolver the test feeds;
every endpoint listens on loopback."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from app.db import Database
from app.webhooks.delivery import DeliveryConfig, WebhookDeliverer
from app.webhooks.jobs import AttemptResult, Outgoing
from app.webhooks.signing import new_secret
from tests.support.tls import LocalAuthority
from tests.support.webhook_receiver import WebhookReceiver


@pytest.fixture
def receivers() -> Iterator[list[WebhookReceiver]]:
    started: list[WebhookReceiver] = []
    yield started
    for receiver in started:
        receiver.stop()


def listening(receivers: list[WebhookReceiver], receiver: WebhookReceiver) -> WebhookReceiver:
    receiver.start()
    receivers.append(receiver)
    return receiver


class Resolver:
    """Answers each name from a script: the first call's answer, then the later calls'."""

    def __init__(self, first: list[str], later: list[str] | None = None) -> None:
        self.first = first
        self.later = later if later is not None else first
        self.asked: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append((host, port))
        return self.first if len(self.asked) == 1 else self.later


async def attempt(deliverer: WebhookDeliverer, url: str) -> AttemptResult:
    outgoing = Outgoing(url, new_secret(), "msg_probe", {"type": "archive.done"})
    try:
        return await deliverer.attempt(outgoing)
    finally:
        await deliverer.close()


async def test_an_attempt_connects_to_the_address_it_vetted(
    database: Database, receivers: list[WebhookReceiver]
) -> None:
    honest = listening(receivers, WebhookReceiver("127.0.0.1"))
    # The same port on another loopback address: where a rebound name would lead.
    trap = listening(receivers, WebhookReceiver("127.0.0.2", honest.port))
    resolver = Resolver(["127.0.0.1"], later=["127.0.0.2"])
    deliverer = WebhookDeliverer(database, DeliveryConfig(allow_private=True), resolver=resolver)
    result = await attempt(deliverer, f"http://rebind.test:{honest.port}/hooks/workmem")
    assert (result.status_code, result.error) == (200, None)
    assert resolver.asked == [("rebind.test", honest.port)], "the name is resolved once"
    assert [r.headers["host"] for r in honest.received] == [f"rebind.test:{honest.port}"]
    assert trap.received == []


async def test_https_is_verified_against_the_host_name(
    database: Database, receivers: list[WebhookReceiver]
) -> None:
    authority = LocalAuthority.create()
    named = listening(receivers, WebhookReceiver(tls=authority.server_context("hooks.test")))
    deliverer = WebhookDeliverer(
        database,
        DeliveryConfig(allow_private=True),
        resolver=Resolver(["127.0.0.1"]),
        verify=authority.client_context(),
    )
    result = await attempt(deliverer, f"https://hooks.test:{named.port}/hooks/workmem")
    assert (result.status_code, result.error) == (200, None)
    assert [r.headers["host"] for r in named.received] == [f"hooks.test:{named.port}"]
    # A certificate for another name, at the address the name resolves to: refused.
    impostor = listening(receivers, WebhookReceiver(tls=authority.server_context("other.test")))
    deliverer = WebhookDeliverer(
        database,
        DeliveryConfig(allow_private=True),
        resolver=Resolver(["127.0.0.1"]),
        verify=authority.client_context(),
    )
    refused = await attempt(deliverer, f"https://hooks.test:{impostor.port}/hooks/workmem")
    assert refused.status_code is None
    assert impostor.received == []


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_attempt_errors_say_nothing_of_the_network_behind(
    database: Database, receivers: list[WebhookReceiver]
) -> None:
    """A closed port, a port that takes the request and never answers, and a refused address
    read alike: the deliveries list is no port scanner."""
    hanging = listening(receivers, WebhookReceiver(hang=True))
    errors = []
    for port in (closed_port(), hanging.port):
        deliverer = WebhookDeliverer(
            database,
            DeliveryConfig(allow_private=True, timeout_s=0.5),
            resolver=Resolver(["127.0.0.1"]),
        )
        result = await attempt(deliverer, f"http://probe.test:{port}/x")
        assert result.status_code is None
        errors.append(result.error)
    assert errors[0] == errors[1], errors
    assert len(hanging.received) == 1
    for addresses in (["10.0.0.7"], ["169.254.169.254"], []):
        deliverer = WebhookDeliverer(
            database, DeliveryConfig(allow_private=False), resolver=Resolver(addresses)
        )
        refused = await attempt(deliverer, "http://internal.test:8080/x")
        assert refused.status_code is None
        assert refused.error == "destination refused: not a public address, or no address at all"
