"""Items of a section body: splitting, bullet markers, normalised equality, markers and snippets.

Owns the line-level vocabulary every guard shares (DESIGN 3.1, 3.4, 3.7). Never decides whether
an op is accepted; it only says what the items are and when two of them are the same.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from enum import StrEnum
from typing import Final

_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s+|$)")
_HEADING = re.compile(r"^\s*#+(?:\s|$)")
# After NFKC every Unicode space is one of these; str.strip is linear where an anchored regex
# alternation would rescan at every position.
_EDGE_CHARS = " \t\n\r\f\v\x1c\x1d\x1e\x1f\x85\u2028\u2029*_`.,;:!?"
_SNIPPET_EDGES = re.compile(r"^[\s_*`]+|[\s_*`]+$")


class Marker(StrEnum):
    RESTORED = "[silently dropped, restored]"
    KEPT_CONSTRAINT = "[kept constraint]"
    RESOLVED = "[resolved]"
    DONE = "[done]"
    LIFTED = "[lifted]"
    UNSOURCED = "[unsourced]"
    CONTRADICTS = "[contradicts source]"
    CONFLICTING = "[conflicting constraint]"
    TOOL_SOURCED = "[tool-sourced]"
    TOOL_OUTPUT = "[from a tool result]"


_MARKER_PREFIX = re.compile(
    r"^\s*(?:" + "|".join(re.escape(marker.value) for marker in Marker) + r")\s*",
    re.IGNORECASE,
)

SNIPPET_CHARS: Final = 40


def is_heading(line: str) -> bool:
    return _HEADING.match(line) is not None


def strip_bullet(line: str) -> str:
    """The line without one leading bullet marker (``-``, ``*``, ``+``, ``1.``, ``1)``)."""
    return _BULLET.sub("", line, count=1).strip()


def split_items(body: str) -> list[str]:
    """Items of a body: non-empty, non-heading lines, bullet marker removed (nested ones too)."""
    return list(_items_of(body))


@functools.lru_cache(maxsize=256)
def _items_of(body: str) -> tuple[str, ...]:
    """``split_items``, kept: every guard, the attribution and the next batch read the same
    bodies again."""
    found: list[str] = []
    for line in body.splitlines():
        if not line.strip() or is_heading(line):
            continue
        item = strip_bullet(line)
        if item:
            found.append(item)
    return tuple(found)


def item_lines(text: str) -> list[str]:
    """An APPEND item as items: one per non-blank line, bullet marker removed."""
    found: list[str] = []
    for line in text.splitlines():
        item = strip_bullet(line)
        if item:
            found.append(item)
    return found


@functools.lru_cache(maxsize=16384)
def normalise(item: str) -> str:
    """The comparison form of an item (DESIGN 3.7): NFKC, casefold, edges and spaces tidied."""
    text = strip_bullet(unicodedata.normalize("NFKC", item).casefold())
    return " ".join(text.strip(_EDGE_CHARS).split())


def render_items(items: Iterable[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def append_items(body: str, items: Iterable[str]) -> str:
    rendered = render_items(items)
    if not body:
        return rendered
    if not rendered:
        return body
    return f"{body}\n{rendered}"


def fresh_items(existing_body: str, candidates: Iterable[str]) -> list[str]:
    """Candidates not present in the body and not repeated among themselves, in order."""
    seen = {normalise(item) for item in split_items(existing_body)}
    fresh: list[str] = []
    for item in candidates:
        key = normalise(item)
        if key and key not in seen:
            seen.add(key)
            fresh.append(item)
    return fresh


@functools.lru_cache(maxsize=16384)
def markers_of(item: str) -> frozenset[Marker]:
    """The markers an item carries: those it starts with, after its bullet marker."""
    text = strip_bullet(item)
    carried: set[Marker] = set()
    while match := _MARKER_PREFIX.match(text):
        carried.add(Marker(match.group(0).strip().lower()))
        text = text[match.end() :]
    return frozenset(carried)


@functools.lru_cache(maxsize=16384)
def strip_markers(item: str) -> str:
    text = strip_bullet(item)
    while match := _MARKER_PREFIX.match(text):
        text = text[match.end() :]
    return text.strip()


def with_marker(marker: Marker, item: str) -> str:
    """The item once more under ``marker``: its own leading markers removed, so none doubles."""
    return f"{marker.value} {strip_markers(item)}"


def snippet(item: str) -> str:
    """The drop-test key of guards C and F: 40 characters after the markers, lower-cased."""
    # Lower-cased before the cut: lower() is context-sensitive (a Greek final sigma), so cutting
    # first could produce a key that is not a substring of the lower-cased text it came from.
    return _SNIPPET_EDGES.sub("", strip_markers(item).lower()[:SNIPPET_CHARS])


def is_kept(item: str, new_content_lower: str) -> bool:
    return snippet(item) in new_content_lower
