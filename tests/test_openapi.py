"""The OpenAPI document states what the API does (defect 8): every error answer with its status
and ``application/problem+json`` schema, and the validator's rules a client must follow."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
import pytest
from pydantic import ValidationError

from app.sessions.schemas import MessageCreate
from tests.conftest import ADMIN_TOKEN, TenantKeys
from tests.support.api import create_session
from tests.support.messages import BAD_MESSAGES, GOOD_PARTS

METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    from app.config import Settings
    from app.main import create_app

    return create_app(Settings(database_url="postgresql://unused/x")).openapi()


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


def test_every_error_answer_is_problem_json(document: dict[str, Any]) -> None:
    assert "HTTPValidationError" not in str(document)
    checked = 0
    for method, path, operation in operations(document):
        for status, response in operation["responses"].items():
            if int(status) >= 400:
                assert list(response["content"]) == ["application/problem+json"], (method, path)
                assert response["content"]["application/problem+json"]["schema"] == {
                    "$ref": "#/components/schemas/Problem"
                }
                checked += 1
    assert checked > 50, checked


def test_each_route_states_the_errors_it_can_give(document: dict[str, Any]) -> None:
    for method, path, operation in operations(document):
        statuses = {int(status) for status in operation["responses"]}
        if path.startswith("/v1/") and not path.startswith("/v1/admin"):
            assert {401, 403, 429, 503} <= statuses, (method, path, statuses)
        if "{" in path:
            assert 404 in statuses, (method, path)
        if "requestBody" in operation:
            assert {408, 413, 422} <= statuses, (method, path)
        if operation.get("parameters") or "requestBody" in operation:
            assert 422 in statuses, (method, path)


def test_writes_that_retry_safely_document_the_idempotency_key(document: dict[str, Any]) -> None:
    keyed = {
        (method, path)
        for method, path, operation in operations(document)
        if any(p["name"] == "Idempotency-Key" for p in operation.get("parameters", []))
    }
    assert keyed == {
        ("post", "/v1/sessions/{agent_session_id}/messages"),
        ("post", "/v1/sessions/{agent_session_id}/messages:batch"),
        ("post", "/v1/sessions/{agent_session_id}/commit"),
    }


def message_schema() -> dict[str, Any]:
    return MessageCreate.model_json_schema()


# NUL characters are refused by the service alone: JSON Schema cannot state it portably.
REFUSED = [
    (case, message)
    for case, message, status in BAD_MESSAGES
    if status == 422 and not case.startswith("NUL")
]


@pytest.mark.parametrize(("case", "message"), REFUSED, ids=[case for case, _ in REFUSED])
def test_the_schema_refuses_what_the_validator_refuses(case: str, message: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        MessageCreate.model_validate(message)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(message, message_schema())


ACCEPTED = [
    *GOOD_PARTS,
    ("a plain user message", {"role": "user", "content": "hi"}),
    (
        "an assistant tool call with null content",
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
    ),
    ("a tool result", {"role": "tool", "tool_call_id": "c1", "content": "ok"}),
    ("unknown fields are kept", {"role": "user", "content": "x", "audio": {"id": "a1"}}),
]


@pytest.mark.parametrize(("case", "message"), ACCEPTED, ids=[case for case, _ in ACCEPTED])
def test_the_schema_accepts_what_the_validator_accepts(case: str, message: dict[str, Any]) -> None:
    MessageCreate.model_validate(message)
    jsonschema.validate(message, message_schema())


def test_the_reserve_rule_is_stated(document: dict[str, Any]) -> None:
    context = document["paths"]["/v1/sessions/{agent_session_id}/context"]["get"]
    [reserve] = [p for p in context["parameters"] if p["name"] == "reserve_tokens"]
    assert "less than token_budget" in reserve["description"]


@pytest.mark.parametrize("value", ["5", True, 5.0])
async def test_keep_recent_count_must_be_an_integer(
    client: httpx.AsyncClient, tenant: TenantKeys, value: object
) -> None:
    agent_session_id = await create_session(client, tenant)
    commit = await client.post(
        f"/v1/sessions/{agent_session_id}/commit",
        json={"keep_recent_count": value},
        headers=tenant.write,
    )
    assert commit.status_code == 422, commit.text
    created = await client.post(
        "/v1/sessions", json={"keep_recent_count": value}, headers=tenant.write
    )
    assert created.status_code == 422, created.text
    compat = await client.post(
        "/api/v1/sessions/kept/commit", json={"keep_recent_count": value}, headers=tenant.write
    )
    assert compat.status_code == 400, compat.text


async def test_a_user_bound_key_learns_nothing_of_another_users_names(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    operator = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    keys = {}
    for user_id in ("alice", "bob"):
        issued = await client.post(
            f"/v1/admin/tenants/{tenant.tenant_id}/api-keys",
            json={"role": "writer", "user_id": user_id},
            headers=operator,
        )
        keys[user_id] = {"Authorization": f"Bearer {issued.json()['key']}"}
    alices = await client.post(
        "/v1/sessions", json={"external_id": "conv-1"}, headers=keys["alice"]
    )
    assert alices.status_code == 201
    bobs = await client.post("/v1/sessions", json={"external_id": "conv-1"}, headers=keys["bob"])
    assert bobs.status_code == 201, "no 409: the name is free for each user"
    assert bobs.json()["id"] != alices.json()["id"]
    again = await client.post("/v1/sessions", json={"external_id": "conv-1"}, headers=keys["bob"])
    assert again.status_code == 409, "a user's own name is still unique"
    # The tenant-wide key sees both, and must say which one it means.
    listed = await client.get("/v1/sessions", params={"external_id": "conv-1"}, headers=tenant.read)
    assert len(listed.json()["items"]) == 2
    ambiguous = await client.get("/api/v1/sessions/conv-1", headers=tenant.read)
    assert ambiguous.status_code == 409
