"""``.overview.md``: front matter, the v2 / legacy / none decision, the legacy abstract (pure)."""

from __future__ import annotations

import pytest

from app.importer.openviking.overview import (
    ABSTRACT_CHARS,
    legacy_abstract,
    read_overview,
    strip_front_matter,
)
from app.importer.openviking.records import OverviewKind
from app.wm.sections import SECTIONS, Section, render
from tests.support.openviking import SAMPLE, SESSIONS

FRONT = "---\ndirectory: viking://user/a/sessions/s/history/archive_001/\n---\n"

FRONT_MATTER = [
    ("with a blank line after it", FRONT + "\n# Working Memory\n", "# Working Memory\n"),
    ("without a blank line after it", FRONT + "# Working Memory\n", "# Working Memory\n"),
    ("none", "# Session Summary\ntext\n", "# Session Summary\ntext\n"),
    (
        "first line not exactly ---",
        "--- \ndirectory: x\n---\nbody\n",
        "--- \ndirectory: x\n---\nbody\n",
    ),
    ("never closed", "---\ndirectory: x\nbody\n", "---\ndirectory: x\nbody\n"),
    ("not on the first line", "\n---\ndirectory: x\n---\nbody", "\n---\ndirectory: x\n---\nbody"),
    ("only front matter", FRONT, ""),
]


@pytest.mark.parametrize(
    ("text", "body"), [(t, b) for _, t, b in FRONT_MATTER], ids=[n for n, *_ in FRONT_MATTER]
)
def test_front_matter(text: str, body: str) -> None:
    assert strip_front_matter(text) == body


def bodies(count: int) -> str:
    """A working memory with the first ``count`` of the seven headers."""
    return "\n".join(
        f"## {section.value}\n- item {n}" for n, section in enumerate(SECTIONS[:count])
    )


KINDS = [
    ("all seven headers", FRONT + "\n# Working Memory\n\n" + bodies(7), OverviewKind.V2),
    ("seven headers without front matter", bodies(7), OverviewKind.V2),
    ("six of the seven", FRONT + bodies(6), OverviewKind.LEGACY),
    (
        "free text",
        "# Session Summary\n\n**One-line overview**: fixing a bug.\n",
        OverviewKind.LEGACY,
    ),
    ("empty", "", OverviewKind.NONE),
    ("blank", "\n \n", OverviewKind.NONE),
    ("front matter alone", FRONT + "\n", OverviewKind.NONE),
]


@pytest.mark.parametrize(
    ("text", "kind"), [(t, k) for _, t, k in KINDS], ids=[n for n, *_ in KINDS]
)
def test_the_seven_headers_decide_v2(text: str, kind: OverviewKind) -> None:
    overview = read_overview(text)
    assert overview.kind is kind
    assert (overview.document is not None) is (kind is OverviewKind.V2)


def test_a_v2_overview_is_read_into_its_sections() -> None:
    path = SAMPLE / SESSIONS / "swe-marshmallow-1867/history/archive_002/.overview.md"
    overview = read_overview(path.read_text())
    assert overview.document is not None
    sections = overview.document.sections
    assert sections[Section.ERRORS] == (
        '- RuntimeError if not found.\n- RuntimeError("Cannot find version information")'
    )
    assert "- reproduce.py (newly referenced)" in sections[Section.FILES]
    assert render(sections) == overview.text


def test_a_legacy_overview_is_kept_whole() -> None:
    path = SAMPLE / SESSIONS / "swe-marshmallow-1867/history/archive_001/.overview.md"
    text = path.read_text()
    overview = read_overview(text)
    assert overview.kind is OverviewKind.LEGACY
    assert overview.text == text.strip() + "\n"


ABSTRACTS = [
    (
        "the labelled line",
        "# Session Summary\n\n**One-line overview**: Fixing it.\n\nProse.",
        "**One-line overview**: Fixing it.",
    ),
    (
        "else the first line that is not a heading",
        "# Notes\n\nThe user likes tea.\nMore.",
        "The user likes tea.",
    ),
    ("nothing but headings", "# A\n## B", ""),
    ("at the limit", "x" * ABSTRACT_CHARS, "x" * ABSTRACT_CHARS),
    ("above the limit", "x" * (ABSTRACT_CHARS + 1), "x" * (ABSTRACT_CHARS - 1) + "…"),
]


@pytest.mark.parametrize(
    ("text", "abstract"), [(t, a) for _, t, a in ABSTRACTS], ids=[n for n, *_ in ABSTRACTS]
)
def test_legacy_abstract(text: str, abstract: str) -> None:
    assert legacy_abstract(text) == abstract
