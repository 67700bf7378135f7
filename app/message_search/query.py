"""The text of a history search as Postgres full-text search reads it: pure, table-tested.

Owns how a query in web-search syntax (words, ``"a phrase"``, ``or``, ``-word``) meets the
index, which reads "/", "." and "\\" as spaces so that paths and dotted names are words: each
path-like term becomes the phrase of its parts (``user.py`` → ``"user py"``), so it matches
those words in that order, never each of them anywhere. Never runs SQL.
"""

from __future__ import annotations

import re
from typing import Final

MAX_QUERY_CHARS: Final = 500
_SEPARATORS: Final = str.maketrans("/.\\", "   ")
_TOKEN: Final = re.compile(r'-?"[^"]*"?|\S+')
_INNER_SEPARATOR: Final = re.compile(r"\w[/.\\]+\w")


def prepared(query: str) -> str:
    """The query with path-like terms quoted as phrases and separators read as spaces."""
    terms: list[str] = []
    for token in _TOKEN.findall(query):
        negated = token.startswith("-") and len(token) > 1
        body = token[1:] if negated else token
        if not body.startswith('"') and _INNER_SEPARATOR.search(body):
            body = f'"{body.strip(".,;:!?")}"'
        terms.append(("-" if negated else "") + body.translate(_SEPARATORS))
    return " ".join(" ".join(term.split()) for term in terms)
