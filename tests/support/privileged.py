"""The inventory of paths that can see more than one tenant, as docs/operations.md lists it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
INVENTORY = re.compile(r"^\| `(workmem_[a-z_]+)\([^`]*\)` \| ([^|]*) \|", re.MULTILINE)
CALLER = re.compile(r"^`(app/[a-z_/]+\.py)`")


def documented() -> dict[str, str | None]:
    """Each listed function, with the module that calls it (None: no code calls it)."""
    rows = INVENTORY.findall((ROOT / "docs" / "operations.md").read_text())
    assert rows, "the inventory table of docs/operations.md was not found"
    found: dict[str, str | None] = {}
    for name, caller in rows:
        module = CALLER.match(caller)
        found[name] = None if module is None else module.group(1)
    return found
