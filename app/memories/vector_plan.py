"""How the vector retriever searches: exactly over the filtered rows, or through the HNSW index.

The HNSW index covers every tenant's memories; a scan of it returns the nearest rows of the
whole table and the tenant, user and category filters are applied afterwards. When the filtered
rows are a small share of the table, too few of those nearest rows survive the filters and the
answer misses most of the true neighbours. So each query is planned from two counts the app can
get cheaply: how many rows its filters keep (counted, capped, and remembered for a while) and
how many rows the table holds (the catalog's estimate):

* few enough filtered rows (``EXACT_MAX_ROWS``): compare the query with each of them, which is
  exact and, for so few rows, about as fast as the index (the rows and their vectors are read
  from the covering index ``ix_memories_vector_scope``, not from the table: see
  ``search_sql``);
* otherwise the index, with ``hnsw.ef_search`` widened so that twice the answer's rows are
  expected to survive the filters; and exact search again when that would take
  ``hnsw.ef_search`` past its maximum.

Both work on every pgvector with HNSW (0.5 and later). pgvector 0.8's iterative scans
(``hnsw.iterative_scan``) were measured too (``bench/filtered_search.py`` reports them on 0.8):
at every share where the index is chosen they found no more than the widened scan, at up to
three times its time, so no plan uses them.

Pure; the counts are fetched by ``repository`` and remembered by ``FilterSizes``.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Final

EXACT_MAX_ROWS: Final = 10_000
"""At or below this many filtered rows the search is exact (measured by
``bench/filtered_search.py``: exact search over 10 000 rows costs about what a widened index scan
does, and is exact)."""
COUNT_CAP: Final = 100_000
"""Filtered rows are counted up to this many; a capped count understates the share, which only
widens the index scan."""
DEFAULT_EF_SEARCH: Final = 40
"""pgvector's default ``hnsw.ef_search``."""
MAX_EF_SEARCH: Final = 1_000
"""The largest ``hnsw.ef_search`` pgvector accepts."""
OVERSAMPLE: Final = 2.0
"""How many more filtered rows than the answer's the index scan should find."""
ITERATIVE_SCAN_SINCE: Final = (0, 8, 0)
"""The pgvector version that brought ``hnsw.iterative_scan`` (measured, not chosen)."""


@dataclass(frozen=True, slots=True)
class VectorPlan:
    """``exact``: compare with every filtered row; else the index with ``ef_search`` and, when
    ``iterative`` (pgvector 0.8 and later; for measurement), an iterative scan."""

    exact: bool
    ef_search: int = DEFAULT_EF_SEARCH
    iterative: bool = False


EXACT = VectorPlan(exact=True)


def parse_version(text: str | None) -> tuple[int, ...]:
    """``"0.8.1"`` → ``(0, 8, 1)``; what cannot be read is ``()`` (older than any version)."""
    if not text:
        return ()
    parts: list[int] = []
    for part in text.split("."):
        digits = ""
        for char in part:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def choose_plan(
    *,
    filtered_rows: int,
    table_rows: int,
    limit: int,
    per_retriever: int,
) -> VectorPlan:
    """The plan for a query whose filters keep ``filtered_rows`` of the ``table_rows`` the
    index holds, that answers ``limit`` hits and takes ``per_retriever`` vector candidates."""
    if filtered_rows <= EXACT_MAX_ROWS:
        return EXACT
    share = filtered_rows / max(table_rows, filtered_rows)
    # Index rows to read so that the answer's rows, with some to spare, pass the filters.
    needed = max(per_retriever, DEFAULT_EF_SEARCH, math.ceil(limit * OVERSAMPLE / share))
    if needed > MAX_EF_SEARCH:
        return EXACT
    return VectorPlan(exact=False, ef_search=needed)


@dataclass(frozen=True, slots=True)
class Sizes:
    """What a query's plan is chosen from."""

    filtered_rows: int
    table_rows: int


class FilterSizes:
    """Counts remembered for ``ttl_s`` seconds, at most ``capacity`` of them (least recently
    used go first). A count that is out of date errs harmlessly while the filtered rows grow
    (exact search stays exact); after they shrink, the index is used for at most ``ttl_s``."""

    def __init__(
        self,
        *,
        ttl_s: float = 60.0,
        capacity: int = 4_096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.capacity = capacity
        self._clock = clock
        self._entries: OrderedDict[Hashable, tuple[float, Sizes]] = OrderedDict()

    def get(self, key: Hashable) -> Sizes | None:
        found = self._entries.get(key)
        if found is None:
            return None
        stored_at, sizes = found
        if self._clock() - stored_at >= self.ttl_s:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return sizes

    def put(self, key: Hashable, sizes: Sizes) -> None:
        self._entries[key] = (self._clock(), sizes)
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def forget(self) -> None:
        self._entries.clear()


SIZES = FilterSizes()
"""The counts of this process."""
