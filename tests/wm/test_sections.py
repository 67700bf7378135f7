"""Sections: canonical rendering and tolerant parsing (DESIGN 3.1, 3.7 "Parsing")."""

from __future__ import annotations

import pytest

from app.wm.sections import (
    SECTIONS,
    ExtraSection,
    Section,
    canonical_body,
    empty_sections,
    heading_name,
    parse,
    render,
    section_for,
)

EMPTY_DOCUMENT = (
    "# Working Memory\n\n"
    "## Session Title\n\n"
    "## Current State\n\n"
    "## Task & Goals\n\n"
    "## Key Facts & Decisions\n\n"
    "## Files & Context\n\n"
    "## Errors & Corrections\n\n"
    "## Open Issues\n"
)


def test_the_seven_headers_in_order() -> None:
    assert [section.value for section in SECTIONS] == [
        "Session Title",
        "Current State",
        "Task & Goals",
        "Key Facts & Decisions",
        "Files & Context",
        "Errors & Corrections",
        "Open Issues",
    ]


def test_an_empty_working_memory_renders_as_title_and_seven_headers() -> None:
    assert render(empty_sections()) == EMPTY_DOCUMENT
    assert render({}) == EMPTY_DOCUMENT


def test_bodies_are_rendered_under_their_headers_and_stripped() -> None:
    bodies = empty_sections()
    bodies[Section.SESSION_TITLE] = "  Fix the parser \n"
    bodies[Section.OPEN_ISSUES] = "- one\n- two\n\n"
    text = render(bodies)
    assert text.startswith("# Working Memory\n\n## Session Title\nFix the parser\n\n## Current")
    assert text.endswith("## Open Issues\n- one\n- two\n")


@pytest.mark.parametrize(
    ("heading", "name"),
    [
        ("Session Title", "Session Title"),
        ("Session Title:", "Session Title"),
        ("Open Issues (3)", "Open Issues"),
        ("**Key Facts & Decisions**", "Key Facts & Decisions"),
        ("**Key Facts & Decisions**:", "Key Facts & Decisions"),
        ("**Task & Goals:** (2)", "Task & Goals"),
        ("4. Key Facts & Decisions", "Key Facts & Decisions"),
        ("  Files   &  Context  ", "Files & Context"),
        ("(3)", "(3)"),
        ("**", "**"),
    ],
)
def test_heading_decorations_are_ignored(heading: str, name: str) -> None:
    assert heading_name(heading) == name


@pytest.mark.parametrize(
    ("name", "section"),
    [
        ("session title", Section.SESSION_TITLE),
        ("OPEN ISSUES", Section.OPEN_ISSUES),
        ("Files  &  Context", Section.FILES),
        ("Flights", None),
    ],
)
def test_section_names_match_case_insensitively(name: str, section: Section | None) -> None:
    assert section_for(name) is section


def test_parse_reads_every_section() -> None:
    document = parse(
        "# Working Memory\n\n## Session Title\nTitle\n\n## Current State\nState\n"
        "## Open Issues\n- a\n- b\n"
    )
    assert document.sections[Section.SESSION_TITLE] == "Title"
    assert document.sections[Section.CURRENT_STATE] == "State"
    assert document.sections[Section.OPEN_ISSUES] == "- a\n- b"
    assert document.sections[Section.FILES] == ""
    assert document.found == {Section.SESSION_TITLE, Section.CURRENT_STATE, Section.OPEN_ISSUES}
    assert document.preamble == ""
    assert document.extra == ()


def test_text_before_the_first_header_is_the_preamble_and_the_title_line_is_neither() -> None:
    document = parse("Legacy overview line\n# Working Memory\nmore\n## Session Title\nT\n")
    assert document.preamble == "Legacy overview line\nmore"
    assert document.sections[Section.SESSION_TITLE] == "T"


def test_a_document_without_headers_is_all_preamble() -> None:
    document = parse("Just a free-text summary.\n\nSecond paragraph.")
    assert document.preamble == "Just a free-text summary.\n\nSecond paragraph."
    assert not document.found
    assert all(body == "" for body in document.sections.values())


def test_unknown_level_two_sections_are_kept_as_extra() -> None:
    document = parse("## Session Title\nT\n## Notes\nkeep me\n## Notes\nagain\n## Open Issues\nx")
    assert document.extra == (ExtraSection("Notes", "keep me"), ExtraSection("Notes", "again"))
    assert document.sections[Section.OPEN_ISSUES] == "x"


def test_deeper_headings_with_other_names_are_body_text() -> None:
    document = parse("## Key Facts & Decisions\n- a\n### Flights\n- b\n")
    assert document.sections[Section.KEY_FACTS] == "- a\n### Flights\n- b"
    assert document.extra == ()


def test_deeper_headings_with_a_section_name_open_the_section() -> None:
    document = parse("### Session Title\nT\n#### Open Issues:\n- q")
    assert document.sections[Section.SESSION_TITLE] == "T"
    assert document.sections[Section.OPEN_ISSUES] == "- q"


def test_a_level_one_heading_is_text() -> None:
    document = parse("# Overview\nintro\n## Session Title\nT\n# Session Title\nstill title")
    assert document.preamble == "# Overview\nintro"
    assert document.sections[Section.SESSION_TITLE] == "T\n# Session Title\nstill title"


def test_a_duplicate_header_appends_to_the_first() -> None:
    document = parse("## Open Issues\n- a\n## Current State\nS\n## Open Issues (2)\n- b\n")
    assert document.sections[Section.OPEN_ISSUES] == "- a\n- b"


def test_decorated_headers_and_crlf_line_ends() -> None:
    document = parse("## **Session Title**:\r\nT\r\n## Errors & Corrections (1)\r\n- e\r\n")
    assert document.sections[Section.SESSION_TITLE] == "T"
    assert document.sections[Section.ERRORS] == "- e"


def test_headers_need_a_space_after_the_hashes() -> None:
    document = parse("##Session Title\n##\nbody")
    assert document.preamble == "##Session Title\n##\nbody"


def test_render_then_parse_is_the_identity_on_parsed_documents() -> None:
    document = parse("## Task & Goals\n  - nested\n- top\n### Sub\ntext\n## Session Title\nT")
    again = parse(render(document.sections))
    assert again.sections == document.sections


@pytest.mark.parametrize(
    ("body", "canonical"),
    [
        ("- a\n## Notes\n- b", "- a\n**Notes**\n- b"),
        ("### Open Issues (2):\n- q", "**Open Issues**\n- q"),
        (
            "# Working Memory\n# Other title\n### Flights",
            "**Working Memory**\n# Other title\n### Flights",
        ),
        ("  \r\nx\r\n\n", "x"),
    ],
)
def test_canonical_bodies_cannot_move_lines_into_other_sections(body: str, canonical: str) -> None:
    assert canonical_body(body) == canonical
    bodies = empty_sections()
    bodies[Section.FILES] = canonical
    assert parse(render(bodies)).sections[Section.FILES] == canonical
