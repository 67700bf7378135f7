"""Files & Context: paths the batch mentions, uses or opens, and packing when the section is full.

Owns which path mentions count (not listings, not site-packages, not one already known) and the
line it gets. Never loses a path when packing: guard D rejects any UPDATE that does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Final

from app.wm.extractor.arguments import append_op, keep_op, update_op
from app.wm.extractor.config import ExtractorConfig
from app.wm.extractor.reading import Reading, label, lines_holding
from app.wm.extractor.tool_calls import flatten
from app.wm.items import fresh_items, split_items
from app.wm.messages import MessageView
from app.wm.paths import EXTENSIONS, find_paths

_FILE_LINE = re.compile(r"\bfile\b", re.IGNORECASE)
# Every path ``find_paths`` can return holds a separator or ends in a listed extension, so a
# text without either is skipped without the (much slower) path scan.
_MAYBE_PATH = re.compile(
    r"[/\\]|\.(?:" + "|".join(sorted(EXTENSIONS, key=len, reverse=True)) + r")(?![\w-])",
    re.IGNORECASE,
)
_FOCUSED_OUTPUT_PATHS: Final = 3


def files_op(reading: Reading, prior: str, config: ExtractorConfig) -> dict[str, object]:
    known = _KnownPaths(find_paths(prior))
    chosen: dict[str, tuple[str, MessageView]] = {}
    for path, source, view in _path_mentions(reading):
        if path in chosen or _is_noise_path(path) or known.holds(path):
            continue
        chosen[path] = (source, view)
        known.add(path)
    fresh = fresh_items(
        prior,
        [reading.cite(f"{path} ({source})", view) for path, (source, view) in chosen.items()],
    )
    fresh = fresh[: config.files_per_batch]
    if not fresh:
        return keep_op()
    old = split_items(prior)
    if len(old) + len(fresh) <= config.files_limit_items:
        return append_op(fresh)
    return update_op(_pack_files(old, fresh, config))


def _paths(text: str) -> list[str]:
    return find_paths(text) if _MAYBE_PATH.search(text) else []


def _path_mentions(reading: Reading) -> Iterable[tuple[str, str, MessageView]]:
    for view in reading.views:
        if view.role in ("user", "assistant"):
            for path in _paths(view.text):
                yield path, f"mentioned by {label(view)}", view
        for call in view.tool_calls:
            if not _MAYBE_PATH.search(call.arguments):
                continue
            try:
                decoded = flatten(json.loads(call.arguments))
            except (ValueError, RecursionError):
                decoded = call.arguments
            for path in _paths(decoded):
                yield path, f"used by {call.name}", view
        if view.role == "tool":
            paths = _paths(view.text)
            if len(paths) > _FOCUSED_OUTPUT_PATHS:
                # A listing (ls, pip, a search over many files) is noise: only lines that name
                # a file on purpose (an opened file, a traceback frame) count.
                lines = lines_holding(view.text, _FILE_LINE.finditer(view.text))
                paths = [path for line in lines for path in _paths(line)]
            for path in paths:
                yield path, f"seen in {view.tool_name} output", view


@lru_cache(maxsize=4096)
def _is_noise_path(path: str) -> bool:
    segments = [segment for segment in re.split(r"[/\\]", path) if segment]
    return all(len(segment) <= 2 for segment in segments) or "site-packages" in path


class _KnownPaths:
    """Paths already known, and the tails after each of their ``/``: a path is known when one
    of them is the same path or ends with it after a ``/`` (``app/a.py`` knows ``a.py``), found
    by one look-up instead of comparing it with every known path."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths: set[str] = set()
        self.tails: set[str] = set()
        for path in paths:
            self.add(path)

    def add(self, path: str) -> None:
        self.paths.add(path)
        slash = path.find("/")
        while slash >= 0:
            self.tails.add(path[slash + 1 :])
            slash = path.find("/", slash + 1)

    def holds(self, path: str) -> bool:
        return path in self.paths or path.lstrip("/") in self.tails


def _pack_files(old: list[str], fresh: list[str], config: ExtractorConfig) -> str:
    """Fewer, longer lines with every path still in them (guard D rejects any lost path)."""
    size = config.files_per_packed_line
    lines = ["; ".join(old[start : start + size]) for start in range(0, len(old), size)]
    return "\n".join(f"- {line}" for line in [*lines, *fresh])
