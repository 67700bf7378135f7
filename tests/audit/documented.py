"""The SQL of ``docs/audit.md``, read from the document itself so the guide cannot drift.

Each query is a fenced ``sql`` block whose first line is ``-- query: <name>``; parameters are
psql variables (``:'name'``), which become driver placeholders here.
"""

from __future__ import annotations

import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "audit.md"

_BLOCK = re.compile(r"```sql\n(.*?)```", re.DOTALL)
_NAME = re.compile(r"^-- query: ([a-z_]+)\n")
_VARIABLE = re.compile(r":'([a-z_]+)'")


def documented_queries(path: Path = GUIDE) -> dict[str, str]:
    """Every named query of the guide; a ``sql`` block without a name is an error."""
    queries: dict[str, str] = {}
    for block in _BLOCK.findall(path.read_text()):
        named = _NAME.match(block)
        assert named is not None, f"an sql block without '-- query: <name>': {block[:80]!r}"
        assert named.group(1) not in queries, f"query {named.group(1)} is documented twice"
        queries[named.group(1)] = block
    return queries


def variables(sql: str) -> set[str]:
    return set(_VARIABLE.findall(sql))


def for_driver(sql: str) -> str:
    """psql's ``:'name'`` as psycopg's ``%(name)s`` (a literal ``%`` doubled first)."""
    return _VARIABLE.sub(r"%(\1)s", sql.replace("%", "%%"))
