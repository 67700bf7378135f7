"""The summary table of ``bench/run_all.py`` reads each benchmark's JSON as it is printed."""

from __future__ import annotations

import pytest

from bench.table_rows import (
    commit_rows,
    context_rows,
    filtered_search_rows,
    history_search_rows,
    memories_rows,
)

LARGE = {"service_p50_ms": 4.4, "raw_hnsw_p50_ms": 2.3, "ratio_p50": 1.9}
SEARCH: dict[str, object] = {
    "queries": 200,
    "hashing_100000": {
        "service_p50_ms": 4.4,
        "raw_hnsw_p50_ms": 2.3,
        "ratio_p50": 1.9,
        "recall_at_10_service_vector": 0.55,
    },
    "hashing_10000": {
        "service_p50_ms": 4.1,
        "raw_hnsw_p50_ms": 1.4,
        "ratio_p50": 2.9,
        "recall_at_10_service_vector": 0.8,
    },
}


def test_memory_search_rows_come_from_the_search_figures() -> None:
    rows = memories_rows({"search": SEARCH, "locomo": {"conversations": 3}})
    figures = [(row.figure, row.value, row.passed) for row in rows]
    assert figures == [
        ("memory search p50, hashing_10000, ms", 4.1, True),
        ("  recall@10 of vector search, hashing_10000", 0.8, None),
        ("memory search p50, hashing_100000, ms", 4.4, True),
        ("  recall@10 of vector search, hashing_100000", 0.55, None),
    ]


def test_a_ratio_above_two_at_100_000_fails() -> None:
    slow = {"hashing_100000": {**LARGE, "ratio_p50": 2.4, "recall_at_10_service_vector": 0.5}}
    (row, _) = memories_rows({"search": slow})
    assert row.passed is False


def case(ratio: float, recall: float) -> dict[str, object]:
    return {
        "filtered_rows": 3000,
        "plan": "exact",
        "p50_ms": 4.0,
        "ratio_p50_to_raw": ratio,
        "recall_at_10": recall,
        "index_only_recall_at_10": 0.1,
    }


def test_filtered_search_rows_hold_each_case_to_its_two_targets() -> None:
    data = {
        "raw_unfiltered_hnsw_p50_ms": 2.0,
        "cases": {
            "small tenant": case(2.0, 0.95),
            "small user": case(2.01, 1.0),
            "category": case(1.0, 0.949),
        },
    }
    rows = filtered_search_rows(data)
    assert [(row.figure, row.ratio, row.passed) for row in rows] == [
        ("memory search p50, small tenant (3000 rows, exact), ms", 2.0, True),
        ("  recall@10, small tenant", None, True),
        ("memory search p50, small user (3000 rows, exact), ms", 2.01, False),
        ("  recall@10, small user", None, True),
        ("memory search p50, category (3000 rows, exact), ms", 1.0, True),
        ("  recall@10, category", None, False),
    ]
    assert rows[1].baseline == "index scan alone = 0.1"


def test_the_duplicate_lookup_rows_hold_its_recall_to_the_search_target() -> None:
    data = {
        "raw_unfiltered_hnsw_p50_ms": 2.0,
        "cases": {},
        "duplicate_lookup": {
            "small user": {"recall_at_3": 0.95, "p50_ms": 1.5},
            "big user": {"recall_at_3": 0.9467, "p50_ms": 3.0},
        },
    }
    rows = filtered_search_rows(data)
    assert [(row.figure, row.value, row.baseline, row.passed) for row in rows] == [
        ("duplicate lookup recall@3, small user", 0.95, "p50 = 1.5 ms", True),
        ("duplicate lookup recall@3, big user", 0.9467, "p50 = 3.0 ms", False),
    ]


PHASE1 = {"commit_10_live_ms": 10.0, "commit_10000_live_ms": 12.0, "ratio_10000_to_10": 1.2}


def _commit(share: float | None, openviking: float | None) -> dict[str, object]:
    figures = {
        "wait_commit_ms": 70.0,
        "phase1_commit_ms": 14.0,
        "wait_to_raw_select": 350.0,
        "openviking_commit_ms": openviking,
        "share_of_openviking": share,
        "prepared_wait_commit_ms": 30.0,
        "prepared_share_of_openviking": share,
    }
    stages = {
        "generation_ms": 50.0,
        "batching_ms": 1.0,
        "extractor_rules_ms": 30.0,
        "merge_guards_provenance_ms": 15.0,
        "other_ms": 4.0,
        "memory_extraction_ms": 12.0,
        "batches": 3,
    }
    return {
        "phase1": PHASE1,
        "wait": {"coding": {"raw_select_commit_ms": 0.2, "sizes": {"1000": figures}}},
        "stages": {"coding": {"sizes": {"1000": stages}}},
    }


@pytest.mark.parametrize(("share", "passed"), [(0.099, True), (0.1, True), (0.101, False)])
def test_a_waiting_commit_passes_at_a_tenth_of_openviking(share: float, passed: bool) -> None:
    rows = commit_rows(_commit(share, 700.0))
    wait = rows[1]
    assert (wait.figure, wait.value, wait.ratio, wait.passed) == (
        "wait: true commit keeping 10, 1000 live coding messages, ms",
        70.0,
        share,
        passed,
    )
    prepared = rows[2]
    assert (prepared.figure, prepared.value, prepared.ratio, prepared.passed) == (
        "  the same prepared while idle, then a turn appended, 1000 live coding, ms",
        30.0,
        share,
        passed,
    )
    assert rows[3].baseline == "raw select+commit, ms = 0.2"


def test_a_size_openviking_was_not_measured_at_is_reported_against_raw_postgres() -> None:
    rows = commit_rows(_commit(None, None))
    assert (rows[1].ratio, rows[1].target, rows[1].passed) == (350.0, "", None)
    assert (rows[2].ratio, rows[2].target, rows[2].passed) == (None, "", None)


def test_each_generation_stage_has_its_time() -> None:
    stage = commit_rows(_commit(0.1, 700.0))[-1]
    assert stage.value == 50.0
    assert stage.figure == (
        "  generation stages, 1000 live coding messages, ms (batching 1.0, extractor_rules 30.0,"
        " merge_guards_provenance 15.0, other 4.0, memory_extraction 12.0)"
    )


def test_the_context_rows_carry_the_recorded_context_when_measured() -> None:
    data: dict[str, object] = {
        "context_ms": {"100": 5.0, "100000": 5.5},
        "context_ratio_100000_vs_100": 1.1,
        "session_ms": {"100": 1.0, "100000": 1.0},
        "session_ratio_100000_vs_100": 1.0,
        "raw_primary_key_select_ms": 0.1,
        "context_recorded_ms": {"100": 6.0, "100000": 6.6},
        "record_cost_ms": {"100": 1.0, "100000": 1.1},
        "record_ratio_100000": 1.2,
    }
    rows = context_rows(data)
    recorded = [row for row in rows if "record" in row.figure]
    assert [(row.value, row.passed) for row in recorded] == [(6.6, True), (1.1, None)]
    slow = {**data, "record_ratio_100000": 1.6}
    assert [row.passed for row in context_rows(slow) if "record=true" in row.figure] == [False]
    older = {key: value for key, value in data.items() if "record" not in key}
    assert not [row for row in context_rows(older) if "record" in row.figure]


def _history(p99: float) -> dict[str, object]:
    shape = {"query": "billing", "p50_ms": p99 / 2, "p99_ms": p99, "hits": 10, "statuses": {}}
    raw = {"p50_ms": 10.0, "p99_ms": 20.0}
    return {
        "messages": 15000,
        "appends": 5000,
        "shapes": {"one_common_word": shape},
        "after_appends": {"one_common_word": shape},
        "raw_statement": {"one_common_word": raw},
        "raw_statement_after_appends": {"one_common_word": raw},
    }


@pytest.mark.parametrize(("p99", "passed"), [(199.9, True), (200.0, True), (200.1, False)])
def test_history_search_holds_each_shape_to_200_ms_before_and_after_appends(
    p99: float, passed: bool
) -> None:
    rows = history_search_rows(_history(p99))
    assert [row.passed for row in rows] == [passed, passed]
    assert "right after 5000 appends" in rows[1].figure
    assert rows[0].baseline == "bare statement p99, ms = 20.0"
    assert rows[0].ratio == round(p99 / 20.0, 3)
