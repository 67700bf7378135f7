"""Errors & Corrections: error lines of tool output and user messages, and user corrections.

Owns what an error line is (an exception name, a failed or fatal line in tool output) and when
a user message corrects the assistant. Only ever appends: the section is append-only (guard E).
"""

from __future__ import annotations

import re

from app.wm.extractor.arguments import append_op, keep_op
from app.wm.extractor.config import ExtractorConfig
from app.wm.extractor.reading import LEADING_MARKUP, Reading, clip, label, sentences
from app.wm.items import fresh_items
from app.wm.messages import MessageView

_ERROR_NAME = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b(?::|\s*$)")
_ERROR_START = re.compile(r"^\s*(?:error|fatal|failed|failure|traceback)\b", re.IGNORECASE)
_FAILED = re.compile(r"\bfailed\b", re.IGNORECASE)
_CODE_LISTING = re.compile(r"^\s*\d+:")
_CORRECTION = re.compile(
    r"^(?:no[,.!]|nope\b|actually[,\s]|that['’]s (?:wrong|not (?:right|correct|what))|"
    r"that is (?:wrong|not (?:right|correct|what))|wrong[,.!]|not quite|i said\b|i meant\b|"
    r"you misunderstood)",
    re.IGNORECASE,
)


def errors_op(reading: Reading, prior: str, config: ExtractorConfig) -> dict[str, object]:
    found: list[str] = []
    previous: MessageView | None = None
    for view in reading.views:
        if view.role == "tool":
            for line in _error_lines(view.text, tool_output=True):
                found.append(f"{view.tool_name}: {clip(line, config.item_chars)}")
        elif view.role == "user" and view.text.strip():
            for line in _error_lines(view.text, tool_output=False):
                found.append(f"{label(view)} reported: {clip(line, config.item_chars)}")
            if _is_correction(view, previous):
                first = " ".join(sentences(view.text)[:2])
                found.append(f"Correction from {label(view)}: {clip(first, config.item_chars)}")
        if view.role in ("user", "assistant") and view.text.strip():
            previous = view
    fresh = fresh_items(prior, found)[: config.errors_per_batch]
    return append_op(fresh) if fresh else keep_op()


def _error_lines(text: str, *, tool_output: bool) -> list[str]:
    lines: list[str] = []
    for line in text.splitlines():
        stripped = LEADING_MARKUP.sub("", line.strip())
        if not stripped or _CODE_LISTING.match(stripped):
            continue
        if _ERROR_NAME.search(stripped) or (
            tool_output and (_ERROR_START.match(stripped) or _FAILED.search(stripped))
        ):
            lines.append(stripped)
    return lines


def _is_correction(view: MessageView, previous: MessageView | None) -> bool:
    if previous is None or previous.role != "assistant":
        return False
    if previous.text.rstrip().endswith("?"):
        # "No, ..." after a question is an answer, not a correction.
        return False
    return _CORRECTION.match(view.text.strip()) is not None
