"""Path-like strings (guard D): file names with a known extension and ``a/b`` segment chains.

Owns what counts as a path in Files & Context, including the path part of URLs and Windows
paths. Never decides an op; guard D compares the sets this module returns.
"""

from __future__ import annotations

import functools
import re
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
_CHAIN = re.compile(
    r"(?<![\w./\\-])(?:~|\.{1,2})?/?" + _FIRST_SEGMENT + r"(?:/[\w.-]+)+/?(?![\w-])"
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

    def add(position: int, raw: str) -> None:
        path = _normalise(raw)
        if path not in found:
            found[path] = position

    def scan(chunk: str, offset: int) -> None:
        for match in _FILE.finditer(chunk):
            add(offset + match.start(), match.group(0))
        for match in _CHAIN.finditer(chunk):
            add(offset + match.start(), match.group(0))

    cursor = 0
    for url in _URL.finditer(text):
        scan(text[cursor : url.start()], cursor)
        scan(_url_path(url.group(0)), url.start())
        cursor = url.end()
    scan(text[cursor:], cursor)
    return tuple(sorted(found, key=lambda path: found[path]))


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
