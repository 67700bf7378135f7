"""Every benchmark and the retention evaluation in one command: one JSON document, one table.

Runs each script in ``bench/`` as its own process (each starts a fresh embedded Postgres, so no
run sees another's data or cache), collects the JSON each prints, and turns it into rows: the
figure, the raw Postgres (or other) baseline measured in the same run, their ratio, the target
and pass or fail. Prints the JSON document; ``--markdown`` writes the table. A benchmark that
fails or times out is a failed row with its error, never a missing one.

    python bench/run_all.py --markdown bench-results.md --logs bench-logs > bench-results.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.table_rows import (  # noqa: E402  (the checkout on the path first, when run as a file)
    Row,
    append_rows,
    bundle_rows,
    commit_rows,
    context_rows,
    filtered_search_rows,
    fork_rows,
    history_search_rows,
    import_rows,
    memories_rows,
    merge_rows,
    retention_rows,
    ui_rows,
)


@dataclass(frozen=True, slots=True)
class Benchmark:
    name: str
    command: list[str]
    rows: Callable[[dict[str, Any]], list[Row]]
    timeout_s: int


BENCHMARKS = (
    Benchmark("merge", ["bench/merge.py"], merge_rows, 300),
    Benchmark("context", ["-m", "bench.context"], context_rows, 900),
    Benchmark("commit", ["-m", "bench.commit"], commit_rows, 1800),
    Benchmark("fork", ["-m", "bench.fork"], fork_rows, 900),
    Benchmark("append", ["-m", "bench.append", "--quick"], append_rows, 1800),
    Benchmark("import_openviking", ["-m", "bench.import_openviking"], import_rows, 900),
    Benchmark("bundle", ["-m", "bench.bundle"], bundle_rows, 1200),
    Benchmark("ui", ["-m", "bench.ui"], ui_rows, 900),
    Benchmark(
        "memories",
        ["-m", "bench.memories", "--embedders", "hashing", "--locomo", ""],
        memories_rows,
        1200,
    ),
    Benchmark("history_search", ["-m", "bench.history_search"], history_search_rows, 1200),
    Benchmark("filtered_search", ["-m", "bench.filtered_search"], filtered_search_rows, 1200),
    Benchmark("retention", ["-m", "bench.retention"], retention_rows, 1200),
)


def machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
    }


def run(benchmark: Benchmark, log_dir: Path) -> tuple[dict[str, Any] | None, list[Row], float]:
    started = time.perf_counter()
    log = log_dir / f"{benchmark.name}.log"
    try:
        done = subprocess.run(
            [sys.executable, *benchmark.command],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=benchmark.timeout_s,
            check=False,
        )
        log.write_text(done.stderr)
        if done.returncode != 0:
            raise RuntimeError(f"exit status {done.returncode}; see {log}")
        data: dict[str, Any] = json.loads(done.stdout)
        rows = benchmark.rows(data)
    except (subprocess.TimeoutExpired, RuntimeError, ValueError, KeyError) as error:
        message = f"did not finish: {error}"
        return (
            None,
            [Row(benchmark.name, message, None, "", None, "runs", False)],
            (time.perf_counter() - started),
        )
    return data, rows, time.perf_counter() - started


def markdown(rows: list[Row], meta: dict[str, Any]) -> str:
    lines = [
        f"Run on {meta['machine']['platform']}, {meta['machine']['cpus']} CPUs, Python "
        f"{meta['machine']['python']}; {meta['duration_s']} s in all.",
        "",
        "| benchmark | figure | value | baseline (same run) | ratio | target | |",
        "|---|---|---:|---|---:|---|---|",
    ]
    for row in rows:
        verdict = "" if row.passed is None else ("pass" if row.passed else "**fail**")
        value = "–" if row.value is None else row.value
        ratio = "–" if row.ratio is None else row.ratio
        lines.append(
            f"| {row.benchmark} | {row.figure} | {value} | {row.baseline or '–'} | {ratio} | "
            f"{row.target or '–'} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--markdown", type=Path, default=None, help="write the table here")
    parser.add_argument("--only", default=None, help="comma-separated benchmark names")
    parser.add_argument(
        "--logs",
        type=Path,
        default=None,
        help="keep each benchmark's stderr here (default: not kept)",
    )
    args = parser.parse_args()
    chosen = [b for b in BENCHMARKS if args.only is None or b.name in args.only.split(",")]
    started = time.perf_counter()
    results: dict[str, Any] = {}
    rows: list[Row] = []
    durations: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="wmbench-all-") as tmp:
        logs = args.logs or Path(tmp)
        logs.mkdir(parents=True, exist_ok=True)
        for benchmark in chosen:
            print(f"run_all: {benchmark.name} …", file=sys.stderr, flush=True)
            data, found, seconds = run(benchmark, logs)
            results[benchmark.name] = data
            rows += found
            durations[benchmark.name] = round(seconds, 1)
            print(f"run_all: {benchmark.name} took {seconds:.0f} s", file=sys.stderr, flush=True)
    meta = {"machine": machine(), "duration_s": round(time.perf_counter() - started, 1)}
    document = {
        **meta,
        "durations_s": durations,
        "rows": [asdict(row) for row in rows],
        "benchmarks": results,
    }
    json.dump(document, sys.stdout, indent=2, ensure_ascii=False)
    print()
    if args.markdown is not None:
        args.markdown.write_text(markdown(rows, meta))


if __name__ == "__main__":
    main()
