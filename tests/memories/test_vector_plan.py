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

OLD = (0, 6, 2)
ITERATIVE = (0, 8, 0)
TABLE = 1_000_000


@pytest.mark.parametrize(
    ("filtered", "table", "limit", "per_retriever", "pgvector", "plan"),
    [
        # The exact threshold, on either pgvector.
        (0, 0, 10, 40, OLD, EXACT),
        (EXACT_MAX_ROWS - 1, TABLE, 10, 40, OLD, EXACT),
        (EXACT_MAX_ROWS, TABLE, 10, 40, OLD, EXACT),
        (EXACT_MAX_ROWS, TABLE, 10, 40, ITERATIVE, EXACT),
        # Above it, the whole table: the index as pgvector's default scans it.
        (EXACT_MAX_ROWS + 1, EXACT_MAX_ROWS + 1, 10, 40, OLD, VectorPlan(False, 40)),
        # A stale catalog estimate below the count is taken as the count.
        (EXACT_MAX_ROWS + 1, 5, 10, 40, OLD, VectorPlan(False, 40)),
        (EXACT_MAX_ROWS + 1, -1, 10, 40, OLD, VectorPlan(False, 40)),
        # More candidates than the default ef_search: as many.
        (200_000, 200_000, 20, 80, OLD, VectorPlan(False, 80)),
        # ef_search covers twice the answer's rows after the filter: 20 / share, from 40.
        (50_000, 100_000, 10, 40, OLD, VectorPlan(False, 40)),
        (50_000, 100_000, 25, 100, OLD, VectorPlan(False, 100)),
        (20_000, 100_000, 10, 40, OLD, VectorPlan(False, 100)),
        (34_000, 100_000, 10, 40, OLD, VectorPlan(False, 59)),
        # ef_search at its maximum (1 000) at a share of 2 %, exact below that.
        (20_000, 1_000_000, 10, 40, OLD, VectorPlan(False, MAX_EF_SEARCH)),
        (19_999, 1_000_000, 10, 40, OLD, EXACT),
        (20_001, 1_000_000, 10, 40, OLD, VectorPlan(False, MAX_EF_SEARCH)),
        (200_000, 200_000, 300, 1_001, OLD, EXACT),
        # pgvector 0.8: the same ef_search and an iterative scan besides; the same fallback.
        (20_000, 100_000, 10, 40, ITERATIVE, VectorPlan(False, 100, iterative=True)),
        (50_000, 100_000, 10, 40, (0, 8, 1), VectorPlan(False, 40, iterative=True)),
        (19_999, 1_000_000, 10, 40, ITERATIVE, EXACT),
        # 0.7 has no iterative scan; an unknown version is taken as the oldest.
        (20_000, 100_000, 10, 40, (0, 7, 4), VectorPlan(False, 100)),
        (20_000, 100_000, 10, 40, (), VectorPlan(False, 100)),
    ],
)
def test_choose_plan(
    filtered: int,
    table: int,
    limit: int,
    per_retriever: int,
    pgvector: tuple[int, ...],
    plan: VectorPlan,
) -> None:
    chosen = choose_plan(
        filtered_rows=filtered,
        table_rows=table,
        limit=limit,
        per_retriever=per_retriever,
        pgvector=pgvector,
    )
    assert chosen == plan


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


SIZES = Sizes(filtered_rows=3, table_rows=10, pgvector=OLD)


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
