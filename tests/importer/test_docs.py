"""The import guide lists every problem code an import can report."""

from __future__ import annotations

from pathlib import Path

from app.importer.openviking.records import ProblemKind

DOC = Path(__file__).resolve().parents[2] / "docs" / "import.md"


def test_every_problem_kind_is_documented() -> None:
    rows = {
        line.split("|")[1].strip().strip("`")
        for line in DOC.read_text().splitlines()
        if line.startswith("| `")
    }
    assert {kind.value for kind in ProblemKind} <= rows
