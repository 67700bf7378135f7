"""An intact update-tool payload whose every kind of character a recovery must keep."""

from __future__ import annotations

import json
from typing import Any

INTACT: dict[str, Any] = {
    "sections": {
        "Session Title": {"op": "KEEP"},
        "Current State": {
            "op": "UPDATE",
            "content": 'Parser half done; said "ok" ] } and moved on.\nNext:\ttests \x01.',
        },
        "Task & Goals": {"op": "KEEP"},
        "Key Facts & Decisions": {
            "op": "APPEND",
            "items": ["uses ] in text", "café “quoted”", "a, b"],
        },
        "Files & Context": {"op": "UPDATE", "content": "- app/wm/recovery.py"},
        "Errors & Corrections": {"op": "KEEP"},
        "Open Issues": {"op": "APPEND", "items": ["Why {braces}?"]},
    }
}
VALID = json.dumps(INTACT, ensure_ascii=False)
