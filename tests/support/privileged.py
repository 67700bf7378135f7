"""The inventory of paths that can see more than one tenant, as docs/operations.md lists it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
INVENTORY = re.compile(r"^\| `(workmem_[a-z_]+)\([^`]*\)` \| `(app/[a-z_/]+\.py)`", re.MULTILINE)


def documented() -> dict[str, str]:
    found = dict(INVENTORY.findall((ROOT / "docs" / "operations.md").read_text()))
    assert found, "the inventory table of docs/operations.md was not found"
    return found
