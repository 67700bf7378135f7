"""Tool calls and their results as short text: what the extractor says a call did and returned.

Owns how arguments and results are flattened, shortened and how identifiers in them are marked
(in backticks, which makes them Key Facts anchors). Never decides which section a call goes to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Final

from app.wm.extractor.reading import clip

_IDENTIFIER = re.compile(r"[\w.:/@+#-]{2,64}")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_BACKTICKED = re.compile(r"`([^`]+)`")
_RESULT_KEYS = re.compile(r"(?:^|_)(?:id|number|status|code)$")
SKIPPED_TOOLS: Final = frozenset({"think"})


def call_summary(name: str, arguments: str, limit: int) -> str:
    """``name``(arguments); when they are too long, their identifiers come first so they stay."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        parsed = arguments
    flat = flatten(parsed)
    if len(flat) > limit:
        identifiers = list(dict.fromkeys(_BACKTICKED.findall(flat)))
        if identifiers:
            flat = ", ".join(f"`{value}`" for value in identifiers) + "; " + flat
    return f"`{name}`({clip(flat, limit)})"


def flatten(value: object, key: str = "") -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{name} {flatten(inner, str(name))}" for name, inner in value.items())
    if isinstance(value, list):
        return "[" + "; ".join(flatten(inner, key) for inner in value) + "]"
    if isinstance(value, str):
        return _show_value(value, key)
    return json.dumps(value)


def _show_value(value: str, key: str) -> str:
    """A string value; identifiers go in backticks, which makes them Key Facts anchors."""
    text = " ".join(value.split())
    looks_like_identifier = _IDENTIFIER.fullmatch(text) is not None and (
        _RESULT_KEYS.search(key.lower()) is not None
        or (
            any(char.isdigit() or char == "_" for char in text)
            and not text.isdigit()
            and _ISO_DATE.fullmatch(text) is None
        )
    )
    return f"`{text}`" if looks_like_identifier else text


def result_summary(text: str, limit: int) -> str:
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, Mapping):
        scalars = {
            key: value for key, value in parsed.items() if not isinstance(value, Mapping | list)
        }
        picked = {key: value for key, value in scalars.items() if _RESULT_KEYS.search(key)}
        return clip(flatten(picked or dict(list(scalars.items())[:3])), limit)
    if isinstance(parsed, list):
        return f"{len(parsed)} results"
    first = next((line for line in text.splitlines() if line.strip()), "")
    return clip(first, limit)
