"""A retention policy's limits, at, below and above each threshold. No database."""

from __future__ import annotations

import pytest

from app.lifecycle.retention_policy import (
    MAX_BATCH,
    MAX_DAYS,
    MIN_DAYS,
    PolicyError,
    Retention,
    check_batch,
    check_days,
    check_memory_days,
)


@pytest.mark.parametrize(
    ("days", "accepted"),
    [
        (None, True),  # off
        (-1, False),
        (-36_500, False),
        (0, False),  # would purge at once what was just written
        (MIN_DAYS, True),
        (MIN_DAYS + 1, True),
        (30, True),
        (MAX_DAYS - 1, True),
        (MAX_DAYS, True),
        (MAX_DAYS + 1, False),
        (10**30, False),  # huge
        (True, False),  # a boolean is no number of days
    ],
)
def test_a_limit_is_off_or_between_one_day_and_a_hundred_years(
    days: int | None, accepted: bool
) -> None:
    if accepted:
        assert check_days(days, "idle_session_days") == days
    else:
        with pytest.raises(PolicyError, match="idle_session_days"):
            check_days(days, "idle_session_days")


def test_the_messages_say_what_to_do() -> None:
    with pytest.raises(PolicyError, match=r"at least 1 day \(null turns it off\); got 0"):
        check_days(0, "archive_messages_days")
    with pytest.raises(PolicyError, match=r"at most 36500 days \(100 years\); got 36501"):
        check_days(36_501, "archive_messages_days")


@pytest.mark.parametrize(
    ("memory_days", "expected"),
    [
        ({}, {}),
        ({"event": 1}, {"event": 1}),
        ({"event": 30, "lesson": MAX_DAYS}, {"event": 30, "lesson": MAX_DAYS}),
        ({"event": 0}, PolicyError("memory_days.event must be at least 1")),
        ({"event": -5}, PolicyError("memory_days.event must be at least 1")),
        ({"profile": MAX_DAYS + 1}, PolicyError("memory_days.profile must be at most")),
        ({"mood": 30}, PolicyError("unknown category 'mood'")),
    ],
)
def test_memory_lifetimes_name_known_categories_and_valid_limits(
    memory_days: dict[str, int], expected: dict[str, int] | PolicyError
) -> None:
    if isinstance(expected, PolicyError):
        with pytest.raises(PolicyError, match=str(expected)):
            check_memory_days(memory_days)
    else:
        assert check_memory_days(memory_days) == expected


@pytest.mark.parametrize(
    ("batch", "accepted"),
    [(0, False), (-1, False), (1, True), (500, True), (MAX_BATCH, True), (MAX_BATCH + 1, False)],
)
def test_a_pass_takes_a_bounded_batch(batch: int, accepted: bool) -> None:
    if accepted:
        assert check_batch(batch) == batch
    else:
        with pytest.raises(PolicyError, match="batch"):
            check_batch(batch)


def test_everything_is_kept_by_default() -> None:
    policy = Retention()
    assert policy.is_off
    assert policy.memory_lifetime_days("event") is None


@pytest.mark.parametrize(
    "policy",
    [
        Retention(archive_messages_days=30),
        Retention(idle_session_days=90),
        Retention(memory_days={"event": 7}),
    ],
)
def test_any_one_limit_turns_the_policy_on(policy: Retention) -> None:
    assert not policy.is_off


def test_a_checked_policy_gives_each_category_its_lifetime() -> None:
    policy = Retention.checked(archive_messages_days=30, memory_days={"event": 7})
    assert (policy.archive_messages_days, policy.idle_session_days) == (30, None)
    assert policy.memory_lifetime_days("event") == 7
    assert policy.memory_lifetime_days("profile") is None
    with pytest.raises(PolicyError, match="archive_messages_days"):
        Retention.checked(archive_messages_days=0)
