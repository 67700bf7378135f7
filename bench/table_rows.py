"""The rows of the one-run benchmark table: one function per benchmark script, from the JSON the
script prints to the figures, each with its same-run baseline, ratio, target and verdict.

Pure: reads dictionaries, never runs anything. ``bench/run_all.py`` runs the scripts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Row:
    benchmark: str
    figure: str
    value: float | int | None
    baseline: str
    ratio: float | None
    target: str
    passed: bool | None
    """``None`` for figures reported without a target."""


def _ratio_row(
    benchmark: str, figure: str, value: float, baseline_name: str, baseline: float,
    ratio: float, target: str, passed: bool,
) -> Row:  # fmt: skip
    return Row(
        benchmark,
        figure,
        round(value, 3),
        f"{baseline_name} = {round(baseline, 3)}",
        round(ratio, 3),
        target,
        passed,
    )


def append_rows(data: dict[str, Any]) -> list[Row]:
    raw8 = data["raw_insert_commit_per_s"]["8_threads"]
    rows = []
    for run in data["runs"]:
        shape = (
            f"{run.get('server', 'uvicorn')}, {run['workers']} worker(s), "
            f"group commit {'on' if run['group_commit'] else 'off'}"
        )
        ratio = run["ratio_8_clients_to_raw_8_threads"]
        eight = max(
            run[name]["messages_per_s"]
            for name in ("single_8_clients", "single_8_clients_2_processes")
            if name in run
        )
        ceilings = [run["http_ceiling_8_clients"]["requests_per_s"]]
        if "http_ceiling_8_clients_2_processes" in run:
            ceilings.append(run["http_ceiling_8_clients_2_processes"]["requests_per_s"])
        to_ceiling = run["ratio_8_clients_to_http_ceiling"]
        rows.append(
            _ratio_row("append", f"POST …/messages, 8 clients, msg/s ({shape})", eight,
                       "raw INSERT+COMMIT at 8 threads, rows/s", raw8, ratio,
                       ">= 0.5 (stretch >= 1)", ratio >= 0.5)
        )  # fmt: skip
        rows.append(
            _ratio_row("append", f"POST …/messages, 8 clients, msg/s ({shape})", eight,
                       "GET /healthz ceiling, same server, req/s", max(ceilings), to_ceiling,
                       ">= 0.8", to_ceiling >= 0.8)
        )  # fmt: skip
        batch = run["ratio_batch_to_single_8"]
        rows.append(
            _ratio_row("append", f"messages:batch of 100, msg/s ({shape})",
                       run["batch_100"]["messages_per_s"], "single appends at 8 clients, msg/s",
                       eight, batch, ">= 5", batch >= 5)
        )  # fmt: skip
    return rows


def _wait_rows(name: str, run: dict[str, Any], size: str, figures: dict[str, Any]) -> list[Row]:
    label = f"wait: true commit keeping 10, {size} live {name} messages, ms"
    share = figures["share_of_openviking"]
    if share is None:
        first = Row(
            "commit",
            label,
            figures["wait_commit_ms"],
            f"raw select+commit, ms = {run['raw_select_commit_ms']}",
            figures["wait_to_raw_select"],
            "",
            None,
        )
    else:
        first = _ratio_row(
            "commit",
            label,
            figures["wait_commit_ms"],
            "OpenViking 0.5.2 commit, ms",
            figures["openviking_commit_ms"],
            share,
            "<= 0.1",
            share <= 0.1,
        )
    ahead = figures["prepared_wait_commit_ms"]
    ahead_share = figures["prepared_share_of_openviking"]
    prepared = Row(
        "commit",
        f"  the same prepared while idle, then a turn appended, {size} live {name}, ms",
        ahead,
        ""
        if ahead_share is None
        else f"OpenViking 0.5.2 commit, ms = {figures['openviking_commit_ms']}",
        ahead_share,
        "" if ahead_share is None else "<= 0.1",
        None if ahead_share is None else ahead_share <= 0.1,
    )
    return [
        first,
        prepared,
        Row("commit", f"  of which phase 1 (same run, wait: false), {size} live, ms",
            figures["phase1_commit_ms"], f"raw select+commit, ms = {run['raw_select_commit_ms']}",
            None, "", None),
    ]  # fmt: skip


def _stage_row(name: str, size: str, stages: dict[str, Any]) -> Row:
    parts = ", ".join(
        f"{key.removesuffix('_ms')} {value}" for key, value in stages.items()
        if key.endswith("_ms") and key != "generation_ms"
    )  # fmt: skip
    return Row("commit", f"  generation stages, {size} live {name} messages, ms ({parts})",
               stages["generation_ms"], "", None, "", None)  # fmt: skip


def commit_rows(data: dict[str, Any]) -> list[Row]:
    phase1 = data["phase1"]
    rows = [
        _ratio_row("commit", "commit phase 1 at 10 000 live messages, ms",
                   phase1["commit_10000_live_ms"], "the same at 10 live, ms",
                   phase1["commit_10_live_ms"], phase1["ratio_10000_to_10"], "<= 1.5",
                   phase1["ratio_10000_to_10"] <= 1.5)
    ]  # fmt: skip
    for name, run in data["wait"].items():
        for size, figures in run["sizes"].items():
            rows += _wait_rows(name, run, size, figures)
    for name, run in data["stages"].items():
        for size, stages in run["sizes"].items():
            rows.append(_stage_row(name, size, stages))
    return rows


def context_rows(data: dict[str, Any]) -> list[Row]:
    context, session = data["context_ms"], data["session_ms"]
    raw = data["raw_primary_key_select_ms"]
    return [
        _ratio_row("context", "GET …/context, 100 000-message history, ms", context["100000"],
                   "the same at 100 messages, ms", context["100"],
                   data["context_ratio_100000_vs_100"], "<= 1.5",
                   data["context_ratio_100000_vs_100"] <= 1.5),
        _ratio_row("context", "GET /v1/sessions/{id}, 100 000 messages, ms", session["100000"],
                   "the same at 100 messages, ms", session["100"],
                   data["session_ratio_100000_vs_100"], "<= 1.2",
                   data["session_ratio_100000_vs_100"] <= 1.2),
        Row("context", "  raw primary-key select (same run), ms", raw, "", None, "", None),
        *_record_rows(data),
    ]  # fmt: skip


def _record_rows(data: dict[str, Any]) -> list[Row]:
    """The context recorded in the ledger (one insert more), when the run measured it."""
    if "context_recorded_ms" not in data:
        return []
    recorded, plain = data["context_recorded_ms"]["100000"], data["context_ms"]["100000"]
    ratio = data["record_ratio_100000"]
    return [
        _ratio_row("context", "GET …/context?record=true, 100 000 messages, ms", recorded,
                   "the same context not recorded, ms", plain, ratio, "<= 1.5", ratio <= 1.5),
        Row("context", "  recording's cost per context (same run), ms",
            data["record_cost_ms"]["100000"], "", None, "", None),
    ]  # fmt: skip


def merge_rows(data: dict[str, Any]) -> list[Row]:
    rows = []
    for name in ("update_merge", "append_merge", "append_merge_and_counts"):
        if name not in data:
            continue
        figures = data[name]
        per_section = figures["us_per_section_1x"]
        rows.append(
            Row("merge", f"{name.replace('_', ' ')}, µs per section at the thresholds",
                per_section, "", None, "about 1 000", per_section <= 1_500)
        )  # fmt: skip
        rows.append(
            _ratio_row("merge", f"{name.replace('_', ' ')} at twice the size, µs",
                       figures["us_per_merge_2x"], "at the thresholds, µs",
                       figures["us_per_merge_1x"], figures["ratio_2x_over_1x"], "<= 2.5",
                       figures["ratio_2x_over_1x"] <= 2.5)
        )  # fmt: skip
    return rows


def import_rows(data: dict[str, Any]) -> list[Row]:
    return [
        _ratio_row("import_openviking", f"import of {data['sessions']} sessions, s",
                   data["import_s"], "raw INSERTs of the same rows, s", data["raw_insert_s"],
                   data["ratio_import_to_raw_insert"], "none (what the import adds)", True),
        Row("import_openviking", "  sessions per second", data["import_sessions_per_s"], "",
            None, "", None),
    ]  # fmt: skip


def bundle_rows(data: dict[str, Any]) -> list[Row]:
    sessions = data["sessions"]
    return [
        Row("bundle", f"export of {sessions} sessions ({data['rows_total']} rows), s",
            data["export_s"], "", None, "none (reported)", None),
        Row("bundle", "import of the bundle into another tenant, s", data["import_s"], "", None,
            "none (reported)", None),
        Row("bundle", "  second import (changes nothing), s", data["reimport_s"], "", None,
            "none (reported)", None),
        Row("bundle", "  bundle size, bytes", data["bundle_bytes"],
            f"JSON lines = {data['json_lines_bytes']}", None, "", None),
    ]  # fmt: skip


def fork_rows(data: dict[str, Any]) -> list[Row]:
    short, long = data["100_messages"], data["100000_messages"]
    rows = []
    for shape, ratio in data["ratio_long_to_short"].items():
        rows.append(
            _ratio_row("fork", f"{shape.replace('_', ' ')}, 100 000 messages, p50 ms",
                       long[shape]["p50_ms"], "the same at 100 messages, p50 ms",
                       short[shape]["p50_ms"], ratio, "<= 1.5", ratio <= 1.5)
        )  # fmt: skip
    ratio = data["ratio_fork_context_to_parent"]["100000_messages"]
    rows.append(
        _ratio_row("fork", "context (fill) of a fork, 100 000 messages, p50 ms",
                   long["context_of_fork"]["p50_ms"], "the parent's context, p50 ms",
                   long["context_of_parent"]["p50_ms"], ratio, "<= 1.5", ratio <= 1.5)
    )  # fmt: skip
    return rows


def ui_rows(data: dict[str, Any]) -> list[Row]:
    ratios = data["ratio_http_long_vs_short"]
    long = data[f"{data['archives']}_archives"]["http_ms"]
    rows = [
        _ratio_row("ui", f"timeline page, {data['archives']} archives, HTTP ms", long["timeline"],
                   "raw timeline query, ms", data["raw_timeline_query_ms"],
                   data["ratio_timeline_http_vs_raw_query"], "none (reference)", True),
        Row("ui", "timeline page, long / short agent session", ratios["timeline"], "", None,
            "<= 1.5 (paged)", ratios["timeline"] <= 1.5),
    ]  # fmt: skip
    for page in sorted(set(ratios) - {"timeline"}):
        rows.append(Row("ui", f"{page} page, long / short agent session", ratios[page], "", None,
                        "", None))  # fmt: skip
    return rows


def memories_rows(data: dict[str, Any]) -> list[Row]:
    """Rows of ``bench/memories.py``'s ``search`` figures (by embedder and size)."""
    rows = []
    for key, figures in sorted(data.get("search", {}).items()):
        if not isinstance(figures, dict) or "ratio_p50" not in figures:
            continue
        size = key.rsplit("_", 1)[-1]
        rows.append(
            _ratio_row("memories", f"memory search p50, {key}, ms", figures["service_p50_ms"],
                       "raw HNSW query p50, ms", figures["raw_hnsw_p50_ms"], figures["ratio_p50"],
                       "<= 2 at 100 000" if size == "100000" else "none (reference)",
                       figures["ratio_p50"] <= 2 if size == "100000" else True)
        )  # fmt: skip
        recall = figures.get("recall_at_10_service_vector")
        rows.append(Row("memories", f"  recall@10 of vector search, {key}", recall, "", None, "",
                        None))  # fmt: skip
    return rows


def filtered_search_rows(data: dict[str, Any]) -> list[Row]:
    """Rows of ``bench/filtered_search.py``: recall@10 and the p50 ratio of each filter case,
    then the duplicate lookup's recall on the same rows (when measured)."""
    rows = []
    raw = data["raw_unfiltered_hnsw_p50_ms"]
    for case, figures in data["cases"].items():
        where = f"{case} ({figures['filtered_rows']} rows, {figures['plan']})"
        rows.append(
            _ratio_row("filtered_search", f"memory search p50, {where}, ms", figures["p50_ms"],
                       "raw unfiltered HNSW p50, ms", raw, figures["ratio_p50_to_raw"], "<= 2",
                       figures["ratio_p50_to_raw"] <= 2)
        )  # fmt: skip
        rows.append(
            Row("filtered_search", f"  recall@10, {case}", figures["recall_at_10"],
                f"index scan alone = {figures['index_only_recall_at_10']}", None, ">= 0.95",
                figures["recall_at_10"] >= 0.95)
        )  # fmt: skip
    for case, figures in data.get("duplicate_lookup", {}).items():
        rows.append(
            Row("filtered_search", f"duplicate lookup recall@3, {case}", figures["recall_at_3"],
                f"p50 = {figures['p50_ms']} ms", None, ">= 0.95", figures["recall_at_3"] >= 0.95)
        )  # fmt: skip
    return rows


def history_search_rows(data: dict[str, Any]) -> list[Row]:
    """Rows of ``bench/history_search.py``: each query shape's p99 over the API at 15 000
    messages, then right after heavy appends, beside the bare statement's p99 in the same run."""
    rows = []
    passes = (
        ("", data["shapes"], data["raw_statement"]),
        (f", right after {data['appends']} appends", data["after_appends"],
         data["raw_statement_after_appends"]),
    )  # fmt: skip
    for when, shapes, raw in passes:
        for shape, figures in shapes.items():
            bare = raw[shape]["p99_ms"]
            rows.append(
                Row("history_search",
                    f"search p99, {shape.replace('_', ' ')}, {data['messages']} messages{when}, ms",
                    figures["p99_ms"], f"bare statement p99, ms = {bare}",
                    round(figures["p99_ms"] / bare, 3) if bare else None, "<= 200 ms",
                    figures["p99_ms"] <= 200)
            )  # fmt: skip
    return rows


def retention_rows(data: dict[str, Any]) -> list[Row]:
    """The recall target is the offline extractor's (the baseline everyone without a model key
    gets); with the adversarial model the figure that must hold is protected-item loss."""
    rows = []
    for generator, run in data.items():
        offline = generator == "offline"
        for budget, scopes in run["summary"]["by_budget"].items():
            long = scopes["long"]
            if long["filled"] is None or not long["truncation"]:
                continue
            ratio = long["filled"] / long["truncation"]
            rows.append(
                Row(f"retention ({generator})",
                    f"anchor recall of the filled context at {budget} tokens, long conversations",
                    round(long["filled"], 3),
                    f"truncation at the same budget = {round(long['truncation'], 3)}",
                    round(ratio, 3), ">= 1.5" if offline else "",
                    ratio >= 1.5 if offline else None)
            )  # fmt: skip
        for target in run["targets"]:
            if target["name"].startswith("filled / truncation") or (
                not offline and target["name"].startswith("conversations below")
            ):
                continue
            rows.append(
                Row(f"retention ({generator})", target["name"], target["value"], "", None,
                    target["target"], target["pass"])
            )  # fmt: skip
    return rows
