"""Isolation, probed from the OpenAPI documents themselves, so a new route is probed as soon as
it exists: every operation of ``/openapi.json`` and ``/api/v1/openapi.json`` is sent

- with another tenant's key, naming this tenant's objects,
- with a key bound to another user of this tenant, naming this user's objects,
- with each role (and the operator token, and no key) where that role may not act,

and must answer exactly as for an object that does not exist (existence is never revealed),
never 2xx on another's object, never list another's objects, and change nothing.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.db import Database
from tests.conftest import ADMIN_TOKEN, TenantKeys, make_tenant

METHODS = ("get", "post", "put", "patch", "delete")
USER_RULES = (
    (Path(__file__).resolve().parent.parent / "docs" / "api.md")
    .read_text()
    .split("### What a key bound to a user may do", 1)[1]
    .split("\n## ", 1)[0]
)
"""The table of what a key bound to a user may do on each route."""
OPERATIONS_ROUTES = ("/metrics", "/healthz", "/readyz", "/health")
"""Routes that show no tenant's data and take no key."""
WRITES = ("post", "put", "patch", "delete")
OPERATOR = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

BODIES: dict[tuple[str, str], Any] = {
    ("post", "/v1/admin/tenants"): {"name": "probe"},
    ("post", "/v1/admin/tenants/{tenant_id}/api-keys"): {"role": "reader"},
    ("post", "/v1/keys"): {"role": "reader"},
    # The target's own name: taking it must look the same as taking a free one.
    ("post", "/v1/sessions"): {"external_id": "{session_id}"},
    ("post", "/v1/sessions/{agent_session_id}/messages"): {"role": "user", "content": "probe"},
    ("post", "/v1/sessions/{agent_session_id}/messages:batch"): {
        "messages": [{"role": "user", "content": "probe"}]
    },
    ("post", "/v1/sessions/{agent_session_id}/commit"): {"keep_recent_count": 0},
    ("post", "/api/v1/sessions"): {"session_id": "probe-created"},
    ("post", "/api/v1/sessions/{session_id}/messages"): {"role": "user", "content": "probe"},
    ("post", "/api/v1/sessions/{session_id}/messages/batch"): {
        "messages": [{"role": "user", "content": "probe"}]
    },
    ("post", "/api/v1/sessions/{session_id}/commit"): {"keep_recent_count": 0},
    ("post", "/v1/sessions/{agent_session_id}/messages:retract"): {},
    ("post", "/v1/sessions/{agent_session_id}/messages/{seq}:redact"): {"reason": "a probe"},
    ("post", "/v1/sessions/{agent_session_id}/pins"): {"text": "a probe's pin"},
    ("post", "/v1/sessions/{agent_session_id}/working-memory:restore"): {"archive_seq": 1},
    ("post", "/v1/sessions/{agent_session_id}:fork"): {"at_archive": 1},
    ("post", "/v1/webhooks"): {"url": "https://93.184.216.34/hooks", "events": ["archive.done"]},
    # The caller's own tenant's policy, and one that purges nothing for a hundred years.
    ("put", "/v1/tenant/retention"): {"idle_session_days": 36_500},
    ("patch", "/v1/sessions/{agent_session_id}"): {"memory_policy": {"working_memory": True}},
    ("put", "/v1/users/{user_id}/memory-policy"): {"working_memory": True},
    ("post", "/v1/sessions/{agent_session_id}/archives/{archive_seq}:retry"): {"reason": "a probe"},
    ("post", "/v1/sessions/{agent_session_id}/archives/{archive_seq}:clear"): {"reason": "a probe"},
    ("patch", "/api/v1/sessions/{session_id}/config"): {"memory_policy": {"working_memory": True}},
}
"""A valid body for each operation that takes one (a new such route must be added here)."""
QUERIES: dict[tuple[str, str], dict[str, str]] = {
    ("get", "/api/v1/sessions/{session_id}/tool-results/{tool_result_id}/search"): {"q": "secret"},
}
"""The query of each operation that needs one to reach its object."""


@dataclass
class Objects:
    """One tenant's objects that probes name: an agent session with a done archive, a key, a
    long-term memory, a webhook subscription, a pin."""

    keys: TenantKeys
    agent_session_id: str
    external_id: str
    api_key_id: str
    task_id: str
    memory_id: str
    webhook_id: str
    pin_id: str
    tool_result_id: str
    context_id: str
    message_count: int = 0

    def path_values(self) -> dict[str, str]:
        return {
            "agent_session_id": self.agent_session_id,
            "archive_seq": "1",
            "api_key_id": self.api_key_id,
            "tenant_id": str(self.keys.tenant_id),
            "session_id": self.external_id,
            "archive_id": "archive_001",
            "task_id": self.task_id,
            "memory_id": self.memory_id,
            "webhook_id": self.webhook_id,
            "pin_id": self.pin_id,
            "tool_result_id": self.tool_result_id,
            "context_id": self.context_id,
            "seq": "1",
            # A user of this tenant (alice, whose objects the sweeps name).
            "user_id": "alice",
        }


def missing_values() -> dict[str, str]:
    return {
        "agent_session_id": str(uuid.uuid4()),
        "archive_seq": "1",
        "api_key_id": str(uuid.uuid4()),
        "tenant_id": str(uuid.uuid4()),
        "session_id": f"missing-{uuid.uuid4().hex[:8]}",
        "archive_id": "archive_001",
        "task_id": f"{uuid.uuid4()}:1",
        "memory_id": str(uuid.uuid4()),
        "webhook_id": str(uuid.uuid4()),
        "pin_id": str(uuid.uuid4()),
        "tool_result_id": f"call_{uuid.uuid4().hex[:12]}",
        "context_id": str(uuid.uuid4()),
        "seq": "1",
        "user_id": f"nobody-{uuid.uuid4().hex[:8]}",
    }


async def objects_of(
    http: httpx.AsyncClient,
    keys: TenantKeys,
    *,
    user_key: str | None = None,
    user_id: str | None = None,
) -> Objects:
    writer = {"Authorization": f"Bearer {user_key}"} if user_key else keys.write
    external_id = f"own-{uuid.uuid4().hex[:8]}"
    created = await http.post(
        f"/api/v1/sessions/{external_id}/messages",
        json={"role": "user", "content": "I prefer green tea to coffee."},
        headers=writer,
    )
    assert created.status_code == 200, created.text
    tool_result_id = f"call_{uuid.uuid4().hex[:12]}"
    tooled = await http.post(
        f"/api/v1/sessions/{external_id}/messages",
        json={
            "role": "assistant",
            "parts": [
                {
                    "type": "tool",
                    "tool_id": tool_result_id,
                    "tool_name": "read_notes",
                    "tool_output": "a secret of mine, as a tool read it",
                    "tool_status": "completed",
                }
            ],
        },
        headers=writer,
    )
    assert tooled.status_code == 200, tooled.text
    listed = await http.get("/v1/sessions", params={"external_id": external_id}, headers=writer)
    agent_session_id = listed.json()["items"][0]["id"]
    await http.post(f"/v1/sessions/{agent_session_id}/commit", json={"wait": True}, headers=writer)
    await http.post(
        f"/api/v1/sessions/{external_id}/messages",
        json={"role": "user", "content": "a secret of mine"},
        headers=writer,
    )
    committed = await http.post(f"/api/v1/sessions/{external_id}/commit", json={}, headers=writer)
    task_id = committed.json()["result"]["task_id"]
    await http.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "user", "content": "later"},
        headers=writer,
    )
    issued = await http.post("/v1/keys", json={"role": "reader"}, headers=keys.headers(keys.admin))
    remembered = (await http.get("/v1/memories", headers=writer)).json()["items"]
    hooked = await http.post(
        "/v1/webhooks", json=BODIES[("post", "/v1/webhooks")], headers=keys.headers(keys.admin)
    )
    assert hooked.status_code == 201, hooked.text
    pinned = await http.post(
        f"/v1/sessions/{agent_session_id}/pins",
        json={"text": "pinned: a secret of mine"},
        headers=writer,
    )
    assert pinned.status_code == 201, pinned.text
    assert remembered, "the probe needs a long-term memory of this owner"
    context = await http.get(
        f"/v1/sessions/{agent_session_id}/context", params={"record": "true"}, headers=writer
    )
    assert context.status_code == 200, context.text
    user_id = user_id or f"user-{uuid.uuid4().hex[:8]}"
    policy = await http.put(
        f"/v1/users/{user_id}/memory-policy",
        json={"memory_types": ["preference", "profile"]},
        headers=keys.headers(keys.admin),
    )
    assert policy.status_code == 200, policy.text
    return Objects(
        keys,
        agent_session_id,
        external_id,
        issued.json()["api_key_id"],
        task_id,
        remembered[0]["id"],
        hooked.json()["id"],
        pinned.json()["pin_id"],
        tool_result_id,
        context.json()["context_id"],
    )


def operations(document: dict[str, Any], prefix: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, prefix + path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


def creates_on_the_way(operation: tuple[str, str, dict[str, Any]]) -> bool:
    """Creating a session under the target's name (and OpenViking's appends, which create the
    session they name, and setting a user's default memory policy) makes one in the caller's
    own namespace: probed last, so no earlier probe sees the caller's own new object."""
    method, template, _ = operation
    return (method, template) in (
        ("post", "/v1/sessions"),
        ("post", "/api/v1/sessions"),
        # A user's default policy, set under the target's user name in the caller's tenant.
        ("put", "/v1/users/{user_id}/memory-policy"),
    ) or template.startswith("/api/v1/sessions/{session_id}/messages")


def fill(path: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda match: values[match.group(1)], path)


def outcome(response: httpx.Response) -> tuple[int, str | None]:
    """What an answer reveals: its status and error type (or OpenViking code)."""
    try:
        body = response.json()
    except ValueError:
        return response.status_code, None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return response.status_code, body["error"].get("code")
    if isinstance(body, dict) and response.status_code >= 400:
        return response.status_code, body.get("type")
    return response.status_code, None


@dataclass
class Tally:
    routes: int = 0
    probes: int = 0
    leaks: list[str] | None = None

    def leak(self, what: str) -> None:
        self.leaks = [*(self.leaks or []), what]


async def send(
    http: httpx.AsyncClient,
    method: str,
    template: str,
    values: dict[str, str],
    headers: dict[str, str],
) -> httpx.Response:
    """The operation, its path and body naming the objects ``values`` give."""
    body = BODIES.get((method, template))
    if body is not None:
        body = json.loads(fill(json.dumps(body), values))
    return await http.request(
        method,
        fill(template, values),
        json=body,
        headers=headers,
        params=QUERIES.get((method, template)),
    )


World = tuple[Objects, Objects, Objects]


@pytest.fixture
async def world(client: httpx.AsyncClient, database: Database) -> World:
    """This tenant's objects, one of its user's (alice, through a key bound to her), another
    tenant's."""
    tenant_a = await make_tenant(database, "owner")
    tenant_b = await make_tenant(database, "stranger")
    alices_key = await bound_key(client, tenant_a, "alice", "writer")
    owner = await objects_of(client, tenant_a)
    alices = await objects_of(client, tenant_a, user_key=alices_key, user_id="alice")
    strangers = await objects_of(client, tenant_b)
    return owner, alices, strangers


async def bound_key(client: httpx.AsyncClient, keys: TenantKeys, user: str, role: str) -> str:
    issued = await client.post(
        f"/v1/admin/tenants/{keys.tenant_id}/api-keys",
        json={"role": role, "user_id": user},
        headers=OPERATOR,
    )
    assert issued.status_code == 201, issued.text
    key: str = issued.json()["key"]
    return key


async def every_operation(client: httpx.AsyncClient) -> list[tuple[str, str, dict[str, Any]]]:
    """Both OpenAPI documents' operations, those that create on the way last."""
    found = [
        *operations((await client.get("/openapi.json")).json(), ""),
        *operations((await client.get("/api/v1/openapi.json")).json(), "/api/v1"),
    ]
    return sorted(found, key=creates_on_the_way)


async def probe_as_stranger(
    client: httpx.AsyncClient,
    tally: Tally,
    method: str,
    template: str,
    headers: dict[str, str],
    target: Objects,
    secrets: list[str],
) -> None:
    """One operation with a stranger's key, naming the target's objects and then missing ones:
    the two answers must say the same, never 2xx on a GET of another's object, and nothing of
    another's may show."""
    foreign = await send(client, method, template, target.path_values(), headers)
    tally.probes += 1
    if "{" in template:
        absent = await send(client, method, template, missing_values(), headers)
        tally.probes += 1
        if outcome(foreign) != outcome(absent):
            tally.leak(
                f"{method.upper()} {template}: {outcome(foreign)} for another's object, "
                f"{outcome(absent)} for none"
            )
        if foreign.is_success and method == "get":
            tally.leak(f"{method.upper()} {template}: 2xx on another's object")
    # The answer may repeat what the request named (a 404 says what was not found), never
    # anything else of another's.
    named = str(foreign.request.url) + foreign.request.content.decode()
    if "secret of mine" in foreign.text or any(
        secret in foreign.text and secret not in named for secret in secrets
    ):
        tally.leak(f"{method.upper()} {template}: another's object in the answer")


async def test_no_route_reveals_or_changes_what_another_tenant_may_not_see(
    client: httpx.AsyncClient, world: World
) -> None:
    owner, alices, strangers = world
    tally = Tally()
    owners_session = f"/v1/sessions/{owner.agent_session_id}"
    before = (await client.get(owners_session, headers=owner.keys.read)).json()
    secrets = [
        owner.agent_session_id,
        owner.external_id,
        alices.agent_session_id,
        owner.memory_id,
        alices.memory_id,
        owner.webhook_id,
    ]
    operations_of_both = await every_operation(client)
    for method, template, operation in operations_of_both:
        if operation.get("requestBody") and (method, template) not in BODIES:
            tally.leak(f"no probe body for {method.upper()} {template}: add one to BODIES")
            continue
        if template in OPERATIONS_ROUTES:
            continue
        tally.routes += 1
        if template.startswith("/v1/admin"):
            # The operator's: no tenant key of any role opens them.
            for key in (owner.keys.admin, owner.keys.writer, owner.keys.reader):
                refused = await send(
                    client,
                    method,
                    template,
                    owner.path_values(),
                    owner.keys.headers(key),
                )
                tally.probes += 1
                if refused.status_code != 401:
                    tally.leak(f"a tenant key on {template}: {refused.status_code}")
            continue
        stranger = strangers.keys.headers(strangers.keys.admin)
        await probe_as_stranger(client, tally, method, template, stranger, owner, secrets)
        # Each role where it may not act.
        values = owner.path_values()
        forbidden: list[tuple[str, dict[str, str], set[int]]] = [
            ("no key", {}, {401}),
            ("operator token", OPERATOR, {403}),
        ]
        if method in WRITES:
            forbidden.append(("reader", owner.keys.read, {403}))
        if template.startswith(
            ("/v1/keys", "/v1/webhooks", "/v1/users", "/v1/tenant", "/v1/usage")
        ):
            forbidden.append(("writer", owner.keys.write, {403}))
            forbidden.append(("reader", owner.keys.read, {403}))
        for role, headers, statuses in forbidden:
            refused = await send(client, method, template, values, headers)
            tally.probes += 1
            if refused.status_code not in statuses:
                tally.leak(f"{role} on {method.upper()} {template}: {refused.status_code}")
    after = (await client.get(owners_session, headers=owner.keys.read)).json()
    if after != before:
        tally.leak(f"the owner's agent session changed: {json.dumps(after)}")
    keys = await client.get("/v1/keys", headers=owner.keys.headers(owner.keys.admin))
    if [k["revoked_at"] for k in keys.json()["items"] if k["api_key_id"] == owner.api_key_id] != [
        None
    ]:
        tally.leak("the owner's key was revoked by a probe")
    print(  # noqa: T201 - the suite's figures
        f"isolation: routes probed {tally.routes}; probes {tally.probes}; leaks {len(tally.leaks or [])}"
    )
    assert tally.leaks is None, "\n".join(tally.leaks or [])
    every = sum(1 for _, path, _ in operations_of_both if path not in OPERATIONS_ROUTES)
    assert tally.routes == every, "every route of both documents was probed"


async def test_a_user_bound_key_of_any_role_reaches_nothing_of_another_user(
    client: httpx.AsyncClient, world: World
) -> None:
    """Keys bound to other users, one per role, on every route naming alice's objects (and the
    tenant-wide ones: the tenant's keys and webhooks) answer as for objects that do not exist,
    show nothing of alice's or of the tenant's, and change nothing."""
    owner, alices, _ = world
    tenant = owner.keys
    admin = tenant.headers(tenant.admin)
    alices_session = f"/v1/sessions/{alices.agent_session_id}"
    before = (await client.get(alices_session, headers=tenant.read)).json()
    hooks_before = (await client.get("/v1/webhooks", headers=admin)).json()
    keys_before = (await client.get("/v1/keys", headers=admin)).json()
    secrets = [
        owner.agent_session_id,
        owner.external_id,
        owner.memory_id,
        owner.pin_id,
        owner.webhook_id,
        alices.agent_session_id,
        alices.external_id,
        alices.memory_id,
        alices.pin_id,
        alices.webhook_id,
        alices.api_key_id,
    ]
    operations_of_both = await every_operation(client)
    tally = Tally()
    for role in ("reader", "writer", "admin"):
        # A user per role: what one creates under alice's names is its own, not a leak.
        bobs = tenant.headers(await bound_key(client, tenant, f"bob-{role}", role))
        for method, template, _operation in operations_of_both:
            if template in OPERATIONS_ROUTES or template.startswith("/v1/admin"):
                continue  # no tenant's data, or the operator's (the tenant sweep probes them)
            tally.routes += 1
            await probe_as_stranger(client, tally, method, template, bobs, alices, secrets)
        for path in ("/v1/webhooks", "/v1/keys"):
            tally.probes += 1
            if (await client.post(path, json=BODIES[("post", path)], headers=bobs)).is_success:
                tally.leak(f"a {role} key bound to a user created on POST {path}")
    if (await client.get(alices_session, headers=tenant.read)).json() != before:
        tally.leak("alice's agent session changed")
    if (await client.get("/v1/webhooks", headers=admin)).json() != hooks_before:
        tally.leak("the tenant's webhooks changed")
    keys_after = (await client.get("/v1/keys", headers=admin)).json()["items"]
    if [key for key in keys_after if key in keys_before["items"]] != keys_before["items"]:
        tally.leak("the tenant's keys changed")
    if len(keys_after) != len(keys_before["items"]) + 3:
        tally.leak("keys were issued beside the three the test issued")
    print(  # noqa: T201 - the suite's figures
        f"user isolation: routes probed {tally.routes}; probes {tally.probes}; "
        f"leaks {len(tally.leaks or [])}"
    )
    assert tally.leaks is None, "\n".join(tally.leaks or [])
    documented = set(re.findall(r"^\| `(GET|POST|PUT|PATCH|DELETE) (\S+)` \|", USER_RULES, re.M))
    probed = {
        (method.upper(), template)
        for method, template, _ in operations_of_both
        if template not in OPERATIONS_ROUTES and not template.startswith("/v1/admin")
    }
    assert probed - documented == set(), "docs/api.md states the rule of every route"
    assert documented - probed == set(), "docs/api.md lists routes that do not exist"
