"""Input that could be stored but not answered, or not stored at all: 422 (or 413), nothing
stored, and every read afterwards still answers (defects 1 and 2 of the hardening issue)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.sessions.records import StoredMessage
from app.sessions.schemas import MessageCreate, MessagePage, MessageRead
from app.sessions.service import Limits, prepare_append
from app.validation import MAX_BODY_DEPTH, MAX_VALUE_DEPTH, json_problem
from tests.conftest import TenantKeys
from tests.support.api import create_session


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


async def stored_count(client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str) -> int:
    read = await client.get(f"/v1/sessions/{agent_session_id}", headers=keys.read)
    assert read.status_code == 200, read.text
    count: int = read.json()["message_count"]
    return count


async def reads_answer(client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str) -> None:
    """Every read that shows the agent session or its messages answers 200."""
    for path in (
        f"/v1/sessions/{agent_session_id}",
        f"/v1/sessions/{agent_session_id}/messages",
        "/v1/sessions",
    ):
        response = await client.get(path, headers=keys.read)
        assert response.status_code == 200, (path, response.text)


# nested(n) is n + 1 objects; inside a message (one more level) the limit is passed at n = 31.
@pytest.mark.parametrize("depth", [300, 256, MAX_VALUE_DEPTH - 1])
async def test_metadata_nested_too_deep_is_refused_before_anything_is_stored(
    client: httpx.AsyncClient, tenant: TenantKeys, depth: int
) -> None:
    agent_session_id = await create_session(client, tenant)
    for _ in range(2):  # a retry of the refused request refuses again and stores nothing
        response = await client.post(
            f"/v1/sessions/{agent_session_id}/messages",
            json={"role": "user", "content": "x", "metadata": nested(depth)},
            headers=tenant.write,
        )
        assert response.status_code == 422, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert "deeper than" in response.text
    assert await stored_count(client, tenant, agent_session_id) == 0
    await reads_answer(client, tenant, agent_session_id)


async def test_metadata_at_the_depth_limit_is_stored_and_read_back(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    deepest = nested(MAX_VALUE_DEPTH - 2)  # 32 levels of objects, the message's own included
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "user", "content": "x", "metadata": deepest},
        headers=tenant.write,
    )
    assert response.status_code == 201, response.text
    assert response.json()["message"]["metadata"] == deepest
    page = await client.get(f"/v1/sessions/{agent_session_id}/messages", headers=tenant.read)
    assert page.json()["items"][0]["metadata"] == deepest
    await reads_answer(client, tenant, agent_session_id)


async def test_a_body_nested_beyond_its_limit_is_refused_on_any_route(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    deep = json.dumps({"metadata": nested(MAX_BODY_DEPTH + 5)})
    for body in (deep, "[" * 100_000 + "]" * 100_000):
        response = await client.post(
            "/v1/sessions",
            content=body,
            headers={**tenant.write, "content-type": "application/json"},
        )
        assert response.status_code == 422, response.text
    listed = await client.get("/v1/sessions", headers=tenant.read)
    assert listed.json()["items"] == []


async def test_session_metadata_nested_too_deep_is_refused(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    response = await client.post(
        "/v1/sessions", json={"metadata": nested(MAX_VALUE_DEPTH + 1)}, headers=tenant.write
    )
    assert response.status_code == 422, response.text
    assert (await client.get("/v1/sessions", headers=tenant.read)).json()["items"] == []


NOT_FINITE = [
    ("NaN in metadata", b'{"role": "user", "content": "x", "metadata": {"v": NaN}}'),
    ("Infinity in metadata", b'{"role": "user", "content": "x", "metadata": {"v": Infinity}}'),
    ("-Infinity in metadata", b'{"role": "user", "content": "x", "metadata": {"v": -Infinity}}'),
    ("1e400 in metadata", b'{"role": "user", "content": "x", "metadata": {"v": 1e400}}'),
    ("NaN in an unknown field", b'{"role": "user", "content": "x", "extra": NaN}'),
    ("a 5000-digit integer", b'{"role": "user", "content": "x", "n": ' + b"9" * 5000 + b"}"),
    ("not UTF-8", b'{"role": "user", "content": "\xff"}'),
]


@pytest.mark.parametrize(("case", "body"), NOT_FINITE, ids=[case for case, _ in NOT_FINITE])
async def test_numbers_json_cannot_carry_are_refused(
    client: httpx.AsyncClient, tenant: TenantKeys, case: str, body: bytes
) -> None:
    agent_session_id = await create_session(client, tenant)
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        content=body,
        headers={**tenant.write, "content-type": "application/json"},
    )
    assert response.status_code == 422, (case, response.text)
    assert response.json()["type"] == "validation_error"
    assert await stored_count(client, tenant, agent_session_id) == 0


def test_values_built_in_code_are_bounded_too() -> None:
    """The importer and the OpenViking adapter build messages in code, not from a body."""
    for bad in (
        {"role": "user", "content": "x", "metadata": {"v": float("nan")}},
        {"role": "user", "content": "x", "metadata": nested(MAX_VALUE_DEPTH + 1)},
        {"role": "user", "content": "x", "note": float("inf")},
    ):
        with pytest.raises(ValueError, match=r"finite|deeper"):
            MessageCreate.model_validate(bad)


CREATED_AT = [
    ("past year 9999 in UTC", "9999-12-31T23:59:59-01:00"),
    ("before year 1 in UTC", "0001-01-01T00:00:00+01:00"),
    ("an offset beyond +15:59", "2024-01-01T00:00:00+16:00"),
    ("an offset beyond -15:59", "2024-01-01T00:00:00-16:30"),
    ("an offset of a day", "2024-01-01T00:00:00+24:00"),
]


@pytest.mark.parametrize(("case", "moment"), CREATED_AT, ids=[case for case, _ in CREATED_AT])
async def test_a_created_at_postgres_cannot_hold_is_refused(
    client: httpx.AsyncClient, tenant: TenantKeys, case: str, moment: str
) -> None:
    agent_session_id = await create_session(client, tenant)
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "user", "content": "x", "created_at": moment},
        headers=tenant.write,
    )
    assert response.status_code == 422, (case, response.text)
    assert await stored_count(client, tenant, agent_session_id) == 0


@pytest.mark.parametrize(
    "moment", ["2024-01-01T00:00:00+15:59", "2024-01-01T00:00:00-15:59", "9999-12-31T23:59:59Z"]
)
async def test_created_at_at_the_edges_is_stored(
    client: httpx.AsyncClient, tenant: TenantKeys, moment: str
) -> None:
    agent_session_id = await create_session(client, tenant)
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "user", "content": "x", "created_at": moment},
        headers=tenant.write,
    )
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("field", ["user_id", "agent_id", "external_id"])
async def test_a_nul_in_a_query_label_is_refused(
    client: httpx.AsyncClient, tenant: TenantKeys, field: str
) -> None:
    response = await client.get("/v1/sessions", params={field: "a\x00b"}, headers=tenant.read)
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["loc"] == ["query", field]


async def test_metadata_above_its_size_limit_is_413(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    big = {"blob": "x" * (Limits().max_metadata_bytes + 1)}
    agent_session_id = await create_session(client, tenant)
    message = await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "user", "content": "x", "metadata": big},
        headers=tenant.write,
    )
    assert message.status_code == 413, message.text
    session = await client.post("/v1/sessions", json={"metadata": big}, headers=tenant.write)
    assert session.status_code == 413, session.text
    assert await stored_count(client, tenant, agent_session_id) == 0


# Any value validation lets through can be answered: the answer of a committed write cannot
# fail after the commit, and neither can any later read of it.

# Storable text only (NUL and lone surrogates are refused elsewhere, tested on their own): the
# values here probe numbers and depth.
STORABLE_CHARACTERS = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=STORABLE_CHARACTERS, max_size=8),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(alphabet=STORABLE_CHARACTERS, max_size=4), children, max_size=3)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(metadata=JSON_VALUES, depth=st.integers(min_value=0, max_value=300))
def test_whatever_validation_accepts_can_be_answered(metadata: Any, depth: int) -> None:
    value: Any = metadata
    for _ in range(depth):
        value = [value]
    try:
        message = MessageCreate.model_validate(
            {"role": "user", "content": "x", "metadata": {"v": value}}
        )
        prepared = prepare_append([message], Limits())
    except ValueError:
        assert json_problem({"metadata": {"v": value}}) is not None
        return
    stored = StoredMessage(
        seq=1,
        role="user",
        turn=1,
        message=prepared.stored[0],
        token_count=prepared.token_counts[0],
        metadata=message.metadata,
        created_at=datetime.now(UTC),
    )
    read = MessageRead.from_stored(stored, archived_upto_seq=0)
    # The deepest envelopes a message is answered in: a page of messages, an archive's.
    answered = MessagePage(items=[read], next_after_seq=None).model_dump_json()
    assert json.loads(answered)["items"][0]["metadata"] == json.loads(json.dumps({"v": value}))
