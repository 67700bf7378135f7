"""Path-like strings (guard D): file names with a known extension and ``a/b`` segment chains.

Owns what counts as a path in Files & Context, including the path part of URLs and Windows
paths. Never decides an op; guard D compares the sets this module returns.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from typing import Final
from urllib.parse import urlsplit


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


EXTENSIONS: Final = _words(
    "py ts tsx js jsx md yaml yml json sh ps1 cmd bat toml ini cfg rs go sql txt html css java "
    "kt rb php c h cc cpp hpp"
)

# Longer extensions first so that the alternation never settles on a prefix (``ts`` of ``tsx``).
_EXTENSION_ALTERNATION = "|".join(sorted(EXTENSIONS, key=lambda ext: (-len(ext), ext)))
_FILE = re.compile(
    r"(?<![\w./\\-])(?:[A-Za-z]:)?[\w./\\-]*[\w-]\.(?:"
    + _EXTENSION_ALTERNATION
    + r")(?![\w-]|\.\w)",
    re.IGNORECASE,
)
# The first segment must look like a name (so ``05/20/2024`` is a date, not a path); later ones
# may start with a digit (``runs/2024/report``).
_FIRST_SEGMENT = r"\.?[^\W\d][\w.-]*"
# A segment never gives back characters (possessive): what follows it, a slash or the end, can
# never start inside one, so trying shorter segments could only fail again.
_CHAIN = re.compile(
    r"(?<![\w./\\-])(?:~|\.{1,2})?/?" + _FIRST_SEGMENT + r"+(?:/[\w.-]++)+/?(?![\w-])"
)
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s<>\"'`)\]]+")
_TRAILING = ".,;:!?/"


def find_paths(text: str) -> list[str]:
    """Path-like strings of a text, normalised, in order of first appearance, without repeats."""
    return list(_paths_of(text))


@functools.lru_cache(maxsize=8192)
def _paths_of(text: str) -> tuple[str, ...]:
    """Found once per text, however many rules look for paths in it."""
    found: dict[str, int] = {}
    cursor = 0
    if "://" in text:  # every URL holds one: most texts have none to cut around
        for url in _URL.finditer(text):
            _scan(found, text[cursor : url.start()], cursor)
            _scan(found, _url_path(url.group(0)), url.start())
            cursor = url.end()
    _scan(found, text[cursor:] if cursor else text, cursor)
    return tuple(sorted(found, key=lambda path: found[path]))


# No path crosses a line (neither pattern matches a line break, and a line break is neither a
# path character nor a word one), so each pattern runs only over the lines that can hold one of
# its matches: a file name holds what ``_FILE_HINT`` finds, a chain a ``/``.
_FILE_HINT = re.compile(r"\.(?:" + _EXTENSION_ALTERNATION + r")(?![\w-]|\.\w)", re.IGNORECASE)


def _ascii(pattern: re.Pattern[str]) -> re.Pattern[str]:
    return re.compile(pattern.pattern, (pattern.flags & ~re.UNICODE) | re.ASCII)


# The same patterns for ASCII text, which both read alike (they hold no whitespace class, the one
# whose ASCII meaning differs on ASCII text): ASCII classes are cheaper to test.
_FILE_ASCII, _CHAIN_ASCII, _FILE_HINT_ASCII = _ascii(_FILE), _ascii(_CHAIN), _ascii(_FILE_HINT)


def _scan(found: dict[str, int], chunk: str, offset: int) -> None:
    """Adds the chunk's paths to ``found`` (each at its first position): file names first, then
    chains, each in text order."""
    ascii_only = chunk.isascii()
    hint = _FILE_HINT_ASCII if ascii_only else _FILE_HINT
    file = _FILE_ASCII if ascii_only else _FILE
    for start, end in _lines_with(chunk, hint.finditer(chunk)):
        for match in file.finditer(chunk, start, end):
            _add(found, offset + match.start(), match.group(0))
    slash = chunk.find("/")
    if slash < 0:
        return
    chain = _CHAIN_ASCII if ascii_only else _CHAIN
    for start, end in _lines_with(chunk, _slashes(chunk, slash)):
        for match in chain.finditer(chunk, start, end):
            _add(found, offset + match.start(), match.group(0))


def _slashes(chunk: str, index: int) -> Iterator[int]:
    """A ``/`` of each line that holds one, from the one at ``index`` on."""
    while index >= 0:
        yield index
        line_end = chunk.find("\n", index)
        index = -1 if line_end < 0 else chunk.find("/", line_end)


def _lines_with(chunk: str, hits: Iterable[int | re.Match[str]]) -> Iterator[tuple[int, int]]:
    """The bounds of each line of ``chunk`` holding a hit, in order, each once."""
    end = -1
    for hit in hits:
        position = hit if isinstance(hit, int) else hit.start()
        if position < end:
            continue
        start = chunk.rfind("\n", 0, position) + 1
        end = chunk.find("\n", position)
        if end < 0:
            end = len(chunk)
        yield start, end


def _add(found: dict[str, int], position: int, raw: str) -> None:
    path = _normalise(raw)
    if path not in found:
        found[path] = position


def _url_path(url: str) -> str:
    try:
        return urlsplit(url).path
    except ValueError:
        return ""


def _normalise(raw: str) -> str:
    path = raw.rstrip(_TRAILING)
    while path.startswith("./"):
        path = path[2:]
    return path
