"""Errors & Corrections: error lines of tool output and of what people report, and corrections.

Owns what an error line is (an exception name in anyone's text, a failed or fatal line in tool
output; never a line of code) and how a correction is written: what replaced what
(``corrections`` decides when a message is one). Only ever appends: the section is append-only
(guard E).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from app.wm.extractor.arguments import append_op, keep_op
from app.wm.extractor.config import ExtractorConfig
from app.wm.extractor.corrections import Correction, correction
from app.wm.extractor.reading import (
    LEADING_MARKUP,
    Reading,
    clip,
    label,
    lines_holding,
    sentences,
)
from app.wm.items import fresh_items
from app.wm.messages import MessageView

_ERROR_NAME = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b(?::|\s*$)")
_ERROR_START = re.compile(r"^\s*(?:error|fatal|failed|failure|traceback)\b", re.IGNORECASE)
_FAILED = re.compile(r"\bfailed\b", re.IGNORECASE)
_CODE_LISTING = re.compile(r"^\s*\d+:")
# A line of code that names an exception handles or raises one; it reports nothing.
_CODE_LINE = re.compile(
    r"^\s*(?:except|raise|class|def|import|from|catch|throw|try|assert)\b|^\s*[\w.]+\s*=[^=]"
)


def errors_op(reading: Reading, prior: str, config: ExtractorConfig) -> dict[str, object]:
    found: list[str] = []
    previous: MessageView | None = None
    for view in reading.views:
        if view.role == "tool":
            for line in _error_lines(view.text, tool_output=True):
                item = f"{view.tool_name}: {clip(line, config.item_chars)}"
                found.append(reading.cite(item, view))
        elif view.role in ("user", "assistant") and view.text.strip():
            for line in _error_lines(view.text, tool_output=False):
                # In what people write, the sentence that names the error, not its neighbours.
                named = [s for s in sentences(line) if _ERROR_NAME.search(s)] or [line]
                item = f"{label(view)} reported: {clip(named[0], config.item_chars)}"
                found.append(reading.cite(item, view))
            if view.role == "user":
                made = correction(view, previous, chat=reading.chat)
                if made is not None:
                    item = _correction_item(view, previous, made, config)
                    found.append(reading.cite(item, view, previous if made.replaced else None))
            else:
                previous = view
    fresh = fresh_items(prior, found)[: config.errors_per_batch]
    return append_op(fresh) if fresh else keep_op()


def _correction_item(
    view: MessageView, previous: MessageView | None, made: Correction, config: ExtractorConfig
) -> str:
    said = clip(made.replacement, config.item_chars)
    if previous is None or not made.replaced:
        return f'Correction from {label(view)}: "{said}"'
    return (
        f'Correction from {label(view)}: "{said}" replaces {label(previous)}\'s "{made.replaced}"'
    )


_TOOL_ERROR_WORDS: Final = ("error", "exception", "fatal", "fail", "traceback")
"""A word every error line of tool output holds, in any case: only the lines holding one are read
(most tool output reports no error)."""
_ANY_TOOL_ERROR: Final = re.compile("|".join(_TOOL_ERROR_WORDS), re.IGNORECASE)
_ANY_TOOL_ERROR_ASCII: Final = re.compile(_ANY_TOOL_ERROR.pattern, re.IGNORECASE | re.ASCII)
_ERROR_NAME_WORDS: Final = ("Error", "Exception")
"""What every exception name holds: the only error lines of what people write."""
_ANY_ERROR_NAME: Final = re.compile("|".join(_ERROR_NAME_WORDS))


def _error_hits(text: str, *, tool_output: bool) -> Iterator[re.Match[str]]:
    """Where the text holds an error word; a text without one is looked at only by substring
    searches (in ASCII text, matching case-insensitively is matching its lower-case form)."""
    if not tool_output:
        if not any(word in text for word in _ERROR_NAME_WORDS):
            return iter(())
        return _ANY_ERROR_NAME.finditer(text)
    if not text.isascii():
        return _ANY_TOOL_ERROR.finditer(text)
    lowered = text.lower()
    if not any(word in lowered for word in _TOOL_ERROR_WORDS):
        return iter(())
    return _ANY_TOOL_ERROR_ASCII.finditer(text)


def _error_lines(text: str, *, tool_output: bool) -> list[str]:
    lines: list[str] = []
    for line in lines_holding(text, _error_hits(text, tool_output=tool_output)):
        stripped = LEADING_MARKUP.sub("", line.strip())
        if not stripped or _CODE_LISTING.match(stripped) or _CODE_LINE.match(stripped):
            continue
        if _ERROR_NAME.search(stripped) or (
            tool_output and (_ERROR_START.match(stripped) or _FAILED.search(stripped))
        ):
            lines.append(stripped)
    return lines
