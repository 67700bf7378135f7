"""The pure parts of the usage report: the range of days, whom a call is for, the chart."""

from __future__ import annotations

import uuid
from datetime import date, timedelta

import pytest

from app.errors import InvalidInput
from app.usage.chart import HEIGHT, LEFT, chart, daily_tokens
from app.usage.records import calls_for, current_scope, milliseconds
from app.usage.service import MAX_DAYS, DayRange

TODAY = date(2026, 12, 2)


@pytest.mark.parametrize(
    ("days", "allowed"),
    [(1, True), (MAX_DAYS - 1, True), (MAX_DAYS, True), (MAX_DAYS + 1, False)],
)
def test_a_range_holds_at_most_366_days(days: int, allowed: bool) -> None:
    first = TODAY - timedelta(days=days - 1)
    if allowed:
        assert DayRange.of(first, TODAY, today=TODAY) == DayRange(first, TODAY)
    else:
        with pytest.raises(InvalidInput):
            DayRange.of(first, TODAY, today=TODAY)


@pytest.mark.parametrize(
    ("first", "last", "allowed"),
    [
        (TODAY, TODAY, True),
        (TODAY - timedelta(days=1), TODAY, True),
        (TODAY, TODAY - timedelta(days=1), False),
    ],
)
def test_from_may_not_be_after_to(first: date, last: date, allowed: bool) -> None:
    if allowed:
        assert DayRange.of(first, last, today=TODAY).last == last
    else:
        with pytest.raises(InvalidInput):
            DayRange.of(first, last, today=TODAY)


def test_the_default_range_is_the_30_days_up_to_today() -> None:
    found = DayRange.of(None, None, today=TODAY)
    assert (found.first, found.last) == (TODAY - timedelta(days=29), TODAY)
    assert found.end - found.start == timedelta(days=30)
    only_to = DayRange.of(None, date(2026, 1, 31), today=TODAY)
    assert only_to.first == date(2026, 1, 2)
    with pytest.raises(InvalidInput):
        DayRange.of(TODAY + timedelta(days=1), None, today=TODAY)


def test_a_call_belongs_to_the_scope_it_was_made_in_else_the_requests_tenant() -> None:
    tenant, session = uuid.uuid4(), uuid.uuid4()
    assert current_scope() is None
    assert current_scope("not a uuid") is None
    assert current_scope(str(tenant)) is not None
    with calls_for(tenant, session, 3) as scope:
        assert current_scope(str(uuid.uuid4())) == scope
        assert (scope.tenant_id, scope.agent_session_id, scope.archive_seq) == (tenant, session, 3)
    assert current_scope() is None


@pytest.mark.parametrize(
    ("seconds", "ms"), [(-0.5, 0), (0.0, 0), (0.0004, 0), (0.0006, 1), (2.5, 2500)]
)
def test_latency_is_whole_milliseconds(seconds: float, ms: int) -> None:
    assert milliseconds(seconds) == ms


def test_every_day_of_the_range_is_a_bar_even_without_calls() -> None:
    first = date(2026, 11, 1)
    days = daily_tokens(
        first,
        date(2026, 11, 3),
        [(first, 10, 1), (first, 5, 4), (date(2026, 11, 3), 20, 10)],
    )
    assert days == [(first, 15, 5), (date(2026, 11, 2), 0, 0), (date(2026, 11, 3), 20, 10)]


def test_the_busiest_day_fills_the_plot() -> None:
    first = date(2026, 11, 1)
    drawn = chart(
        [(first, 15, 5), (first + timedelta(days=1), 0, 0), (first + timedelta(days=2), 20, 10)]
    )
    assert drawn.peak == 30
    busiest = drawn.bars[2]
    assert busiest.input_height + busiest.output_height == pytest.approx(drawn.plot_height)
    assert busiest.output_y == pytest.approx(0)
    assert drawn.bars[0].input_height == pytest.approx(drawn.plot_height / 2)
    assert drawn.bars[1].input_height == drawn.bars[1].output_height == 0
    assert all(LEFT <= bar.x < drawn.width for bar in drawn.bars)
    assert drawn.plot_height < HEIGHT


@pytest.mark.parametrize(("days", "labelled"), [(1, 1), (7, 7), (8, 8), (30, 8), (366, 8)])
def test_about_seven_days_are_labelled(days: int, labelled: int) -> None:
    first = date(2026, 1, 1)
    drawn = chart([(first + timedelta(days=n), 0, 0) for n in range(days)])
    assert drawn.peak == 0
    assert sum(bar.labelled for bar in drawn.bars) == labelled
