"""The identifiers OpenViking clients see: session ids, archive ids, task ids, message ids."""

from __future__ import annotations

import uuid

import pytest

from app.compat.openviking import ids

AGENT_SESSION = uuid.UUID("0a05489527854538a0d5e4ade4525c77")


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("a", True),
        ("conv-1_user.name@example.com", True),
        ("A" * 255, True),
        ("A" * 256, False),
        ("", False),
        ("a/b", False),
        ("a\\b", False),
        ("a b", False),
        ("a%2Fb", False),
        ("ünïcode", False),
        ("a\n", False),
        # Dot segments: a normalising client removes them from a path.
        (".", False),
        ("..", False),
        ("...", True),
        (".a", True),
        ("a..", True),
        ("." * 255, True),
        ("." * 256, False),
    ],
)
def test_session_ids(value: str, valid: bool) -> None:
    assert ids.is_session_id(value) is valid


def test_generated_session_ids_are_valid_and_new() -> None:
    first, second = ids.new_session_id(), ids.new_session_id()
    assert ids.is_session_id(first)
    assert first != second


@pytest.mark.parametrize(
    ("archive_seq", "archive_id"),
    [(1, "archive_001"), (12, "archive_012"), (999, "archive_999"), (1000, "archive_1000")],
)
def test_archive_ids_round_trip(archive_seq: int, archive_id: str) -> None:
    assert ids.archive_id(archive_seq) == archive_id
    assert ids.parse_archive_id(archive_id) == archive_seq


@pytest.mark.parametrize(
    ("value", "archive_seq"),
    [
        ("archive_1", 1),
        ("archive_0001", 1),
        ("archive_2147483647", 2**31 - 1),
        ("archive_2147483648", None),
        ("archive_000", None),
        ("archive_", None),
        ("archive_1a", None),
        ("archive_-1", None),
        ("Archive_001", None),
        ("001", None),
        ("archive_12345678901", None),
    ],
)
def test_archive_ids_that_name_no_archive(value: str, archive_seq: int | None) -> None:
    assert ids.parse_archive_id(value) == archive_seq


def test_task_ids_round_trip() -> None:
    value = ids.task_id(AGENT_SESSION, 7)
    assert value == "commit-0a05489527854538a0d5e4ade4525c77-7"
    assert ids.parse_task_id(value) == (AGENT_SESSION, 7)
    assert ids.parse_task_id(ids.task_id(AGENT_SESSION, 2**31 - 1)) == (AGENT_SESSION, 2**31 - 1)


@pytest.mark.parametrize(
    "value",
    [
        "commit-0a05489527854538a0d5e4ade4525c77-0",
        "commit-0a05489527854538a0d5e4ade4525c77-2147483648",
        "commit-0a05489527854538a0d5e4ade4525c77-01",
        "commit-0a05489527854538a0d5e4ade4525c7-1",
        "commit-0A05489527854538A0D5E4ADE4525C77-1",
        "commit-0a054895-2785-4538-a0d5-e4ade4525c77-1",
        "0a05489527854538a0d5e4ade4525c77-1",
        "commit-0a05489527854538a0d5e4ade4525c77-1-",
        "",
    ],
)
def test_task_ids_that_name_no_task(value: str) -> None:
    assert ids.parse_task_id(value) is None


def test_message_ids_look_like_openvikings_and_carry_the_seq() -> None:
    assert ids.message_id(1) == "msg_" + "0" * 31 + "1"
    assert ids.message_id(255) == "msg_" + "0" * 30 + "ff"
    assert len(ids.message_id(2**63 - 1)) == len("msg_") + 32


@pytest.mark.parametrize(
    ("session_id", "uri"),
    [
        ("conv-1", "viking://session/conv-1"),
        ("user@example.com", "viking://session/user@example.com"),
        ("a b/c", "viking://session/a%20b%2Fc"),
    ],
)
def test_uris(session_id: str, uri: str) -> None:
    assert ids.session_uri(session_id) == uri
    assert ids.archive_uri(session_id, 3) == f"{uri}/history/archive_003"
