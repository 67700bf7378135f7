"""Damage done to a copy of the sample OpenViking workspace, and where the reader must report it."""

from __future__ import annotations

import json
from pathlib import Path

from app.importer.openviking.records import ProblemKind
from tests.support.openviking import SESSIONS


def corrupt(workspace: Path) -> None:
    """The damage of a real workspace: a truncated line, a lost ``.meta.json``, an unknown part
    type, and an archive folder whose messages are gone."""
    swe = workspace / SESSIONS / "swe-marshmallow-1867"
    archived = swe / "history/archive_002/messages.jsonl"
    rows = archived.read_text().split("\n")
    rows[2] = rows[2][: len(rows[2]) // 2]
    archived.write_text("\n".join(rows))
    (workspace / SESSIONS / "tau-airline-task0-trial0/.meta.json").unlink()
    live = workspace / SESSIONS / "locomo-conv26/messages.jsonl"
    rows = live.read_text().split("\n")
    first = json.loads(rows[0])
    first["parts"].append({"type": "hologram", "uri": "viking://x"})
    rows[0] = json.dumps(first)
    live.write_text("\n".join(rows))
    empty = workspace / SESSIONS / "locomo-conv26/history/archive_003"
    empty.mkdir()
    (empty / "messages.jsonl").write_text("")
    (empty / ".done").write_text("{}")


CORRUPTION = [
    (
        "viking/acme/user/alice/sessions/locomo-conv26/history/archive_003",
        None,
        ProblemKind.EMPTY_ARCHIVE,
    ),
    ("viking/acme/user/alice/sessions/locomo-conv26/messages.jsonl", 1, ProblemKind.UNKNOWN_PART),
    ("viking/acme/user/alice/sessions/locomo-conv26/.meta.json", None, ProblemKind.META_MISMATCH),
    (
        "viking/acme/user/alice/sessions/swe-marshmallow-1867/history/archive_002/messages.jsonl",
        3,
        ProblemKind.INVALID_JSON,
    ),
    (
        "viking/acme/user/alice/sessions/swe-marshmallow-1867/.meta.json",
        None,
        ProblemKind.META_MISMATCH,
    ),
    (
        "viking/acme/user/alice/sessions/tau-airline-task0-trial0/.meta.json",
        None,
        ProblemKind.MISSING_META,
    ),
]
