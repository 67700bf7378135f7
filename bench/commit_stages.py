"""The offline generation of a waiting commit, stage by stage, in process on the same messages.

A waiting commit's time beyond phase 1 is its archive job: the offline working memory (cutting
the archive into batches, the extractor's rules, the merge with its guards, attribution and the
trust rules) and the long-term memory extraction. Each is timed here on the messages the commit
bench sends, so the JSON says where the time goes; the generation's result is the one the server
stores (the same pure functions, called the same way).
"""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from collections.abc import Iterator, Mapping, Sequence
from itertools import count, islice
from typing import Any

from app.archives import generation
from app.archives.working_memory import WorkingMemory
from app.memories.extraction import MemoryExtractor
from app.replay.datasets import DatasetMissing, swe_agent, tau_airline

_NUMBER = re.compile(r"\d+")


def varied(messages: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The messages endlessly; from the second pass on, every number in a text is shifted by the
    pass's index, so a long session is not the same few texts again (ids, line numbers and
    error codes differ, as in a real one) and nothing a cache kept from an earlier pass helps."""
    for turn in count():
        for message in messages:
            content = message.get("content")
            if turn == 0 or not isinstance(content, str):
                yield message
                continue
            yield {**message, "content": _shifted(content, turn)}


def _shifted(text: str, by: int) -> str:
    return _NUMBER.sub(lambda match: str(int(match.group(0)) + by), text)


def dialogue(name: str) -> tuple[str, Iterator[dict[str, Any]]]:
    """``airline`` (an airline agent's real sessions, τ-bench runs back to back) or ``coding``
    (SWE-agent trajectories: paths, tracebacks, ids), or generated text when absent."""
    try:
        runs = tau_airline() if name == "airline" else swe_agent()
    except DatasetMissing:
        generated = (
            {"role": "user" if n % 2 == 0 else "assistant",
             "content": f"Message {n}: rebook flight HAT{n % 300:03d} for user_{n % 97}."}
            for n in range(10**9)
        )  # fmt: skip
        return "generated", generated
    messages = [m for run in runs for m in run.messages if m.get("role") != "system"]
    label = "tau-bench airline runs" if name == "airline" else "SWE-agent trajectories"
    return label, varied(messages)


def first_live(source: Iterator[dict[str, Any]], live: int) -> list[dict[str, Any]]:
    """``live`` messages of ``source``; a session starts with its customer, never a tool."""
    batch = list(islice(source, live))
    while batch and batch[0]["role"] == "tool":
        batch = [*batch[1:], next(source)]
    return batch


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


class _Timed:
    """Wraps a function of the generation module for one run, adding up the time spent in it:
    the stages are timed inside the real generation, not re-run beside it (the texts' analyses
    are kept once computed, so a second run would be timed warm)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seconds = 0.0
        self.original = getattr(generation, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.original(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started

    def __enter__(self) -> _Timed:
        setattr(generation, self.name, self)
        return self

    def __exit__(self, *_: object) -> None:
        setattr(generation, self.name, self.original)


async def _stages_once(messages: Sequence[Mapping[str, object]]) -> dict[str, float]:
    generator = generation.WorkingMemoryGenerator(None)
    with (
        _Timed("offline_batches") as batching,
        _Timed("extract") as rules,
        _Timed("merge") as merging,
    ):
        started = time.perf_counter()
        generated = await generator.generate(WorkingMemory.empty(), messages)
        total = time.perf_counter() - started
    numbered = [(seq, dict(message)) for seq, message in enumerate(messages, 1)]
    started = time.perf_counter()
    await MemoryExtractor.offline().prepare(numbered)
    memories = time.perf_counter() - started
    return {
        "generation_ms": _ms(total),
        "batching_ms": _ms(batching.seconds),
        "extractor_rules_ms": _ms(rules.seconds),
        "merge_guards_provenance_ms": _ms(merging.seconds),
        "other_ms": _ms(total - batching.seconds - rules.seconds - merging.seconds),
        "memory_extraction_ms": _ms(memories),
        "batches": generated.batches,
    }


def generation_stages(name: str, sizes: tuple[int, ...], rounds: int) -> dict[str, Any]:
    """Median time of each stage per size, on fresh (varied) messages every round."""
    label, source = dialogue(name)
    asyncio.run(_stages_once(first_live(source, 50)))  # warm-up: the tokenizer, compiled rules
    result: dict[str, Any] = {"live_messages": label, "rounds": rounds, "sizes": {}}
    for size in sizes:
        runs = [asyncio.run(_stages_once(first_live(source, size))) for _ in range(rounds)]
        result["sizes"][str(size)] = {
            key: round(statistics.median(run[key] for run in runs), 1) for key in runs[0]
        }
    return result
