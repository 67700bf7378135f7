"""Test modules share helpers through ``tests/support``, never by importing each other.

Importing a test module runs its collection-time code a second time and, under pytest, can
collect its tests twice; a helper that lives in a test module also moves whenever that test does.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("tests", "bench", "examples")


def imported_modules(source: str) -> list[tuple[int, str]]:
    """Every absolute module a source imports (``from m import n`` counts ``m`` and ``m.n``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return found


def imports_of_test_modules(source: str) -> list[str]:
    """The test modules (``tests.….test_*``) a source imports."""
    return [
        f"line {line}: {module}"
        for line, module in imported_modules(source)
        if module.startswith("tests.") and module.rsplit(".", 1)[-1].startswith("test_")
    ]


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from tests.support.api import commit\n", []),
        ("from tests.conftest import TenantKeys\n", []),
        ("import tests.support.servers\n", []),
        ("from app.testing import test_client\n", []),
        (
            "from tests.sessions.test_api import create_session\n",
            ["line 1: tests.sessions.test_api"],
        ),
        ("import tests.test_e2e\n", ["line 1: tests.test_e2e"]),
        ("\nfrom tests import test_e2e\n", ["line 2: tests.test_e2e"]),
        (
            "def f():\n    from tests.wm.test_recovery import VALID\n",
            ["line 2: tests.wm.test_recovery"],
        ),
    ],
)
def test_the_check_finds_imports_of_test_modules(source: str, found: list[str]) -> None:
    assert imports_of_test_modules(source) == found


def test_no_module_imports_a_test_module() -> None:
    offenders = {
        str(path.relative_to(ROOT)): hits
        for folder in SCANNED
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (hits := imports_of_test_modules(path.read_text()))
    }
    assert offenders == {}, "move the shared helper into tests/support/"
