"""The choice between exact and index search, as a table at, below and above each threshold, and
the counts remembered for it."""

from __future__ import annotations

import pytest

from app.memories.vector_plan import (
    COUNT_CAP,
    EXACT,
    EXACT_MAX_ROWS,
    MAX_EF_SEARCH,
    FilterSizes,
    Sizes,
    VectorPlan,
    choose_plan,
    parse_version,
)

TABLE = 1_000_000


@pytest.mark.parametrize(
    ("filtered", "table", "limit", "per_retriever", "plan"),
    [
        # The exact threshold.
        (0, 0, 10, 40, EXACT),
        (EXACT_MAX_ROWS - 1, TABLE, 10, 40, EXACT),
        (EXACT_MAX_ROWS, TABLE, 10, 40, EXACT),
        # Above it, the whole table: the index as pgvector's default scans it.
        (EXACT_MAX_ROWS + 1, EXACT_MAX_ROWS + 1, 10, 40, VectorPlan(False, 40)),
        # A stale catalog estimate below the count is taken as the count.
        (EXACT_MAX_ROWS + 1, 5, 10, 40, VectorPlan(False, 40)),
        (EXACT_MAX_ROWS + 1, -1, 10, 40, VectorPlan(False, 40)),
        # More candidates than the default ef_search: as many.
        (200_000, 200_000, 20, 80, VectorPlan(False, 80)),
        # ef_search covers twice the answer's rows after the filter: 20 / share, from 40.
        (50_000, 100_000, 10, 40, VectorPlan(False, 40)),
        (50_000, 100_000, 25, 100, VectorPlan(False, 100)),
        (20_000, 100_000, 10, 40, VectorPlan(False, 100)),
        (34_000, 100_000, 10, 40, VectorPlan(False, 59)),
        # ef_search at its maximum (1 000) at a share of 2 %, exact below that.
        (20_000, 1_000_000, 10, 40, VectorPlan(False, MAX_EF_SEARCH)),
        (19_999, 1_000_000, 10, 40, EXACT),
        (20_001, 1_000_000, 10, 40, VectorPlan(False, MAX_EF_SEARCH)),
        (200_000, 200_000, 300, 1_001, EXACT),
    ],
)
def test_choose_plan(
    filtered: int, table: int, limit: int, per_retriever: int, plan: VectorPlan
) -> None:
    chosen = choose_plan(
        filtered_rows=filtered, table_rows=table, limit=limit, per_retriever=per_retriever
    )
    assert chosen == plan
    assert not chosen.iterative


def test_the_count_cap_is_above_the_exact_threshold() -> None:
    # A capped count must still tell "exact" from "index".
    assert COUNT_CAP > EXACT_MAX_ROWS


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("0.6.2", (0, 6, 2)),
        ("0.8.0", (0, 8, 0)),
        ("0.8.1-dev", (0, 8, 1)),
        ("1.0", (1, 0)),
        ("10.2beta1", (10, 2)),
        ("x.1", ()),
        ("", ()),
        (None, ()),
    ],
)
def test_parse_version(text: str | None, version: tuple[int, ...]) -> None:
    assert parse_version(text) == version


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


SIZES = Sizes(filtered_rows=3, table_rows=10)


@pytest.mark.parametrize(("elapsed", "kept"), [(0.0, True), (59.999, True), (60.0, False)])
def test_counts_are_remembered_for_their_ttl(elapsed: float, kept: bool) -> None:
    clock = Clock()
    sizes = FilterSizes(ttl_s=60.0, clock=clock)
    sizes.put("key", SIZES)
    clock.now += elapsed
    assert sizes.get("key") == (SIZES if kept else None)
    assert sizes.get("other") is None


def test_the_least_recently_used_count_goes_first_past_the_capacity() -> None:
    sizes = FilterSizes(capacity=2, clock=Clock())
    sizes.put("a", SIZES)
    sizes.put("b", SIZES)
    assert sizes.get("a") == SIZES  # a is now the most recently used
    sizes.put("c", SIZES)
    assert sizes.get("b") is None
    assert sizes.get("a") == sizes.get("c") == SIZES
    sizes.forget()
    assert sizes.get("a") is None
