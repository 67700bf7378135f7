"""Items, bullet markers, normalised equality, markers and snippets (DESIGN 3.1, 3.4, 3.7)."""

from __future__ import annotations

import pytest

from app.wm.items import (
    Marker,
    append_items,
    fresh_items,
    is_heading,
    is_kept,
    item_lines,
    markers_of,
    normalise,
    render_items,
    snippet,
    split_items,
    strip_bullet,
    strip_markers,
    with_marker,
)


@pytest.mark.parametrize(
    ("line", "item"),
    [
        ("- dash", "dash"),
        ("* star", "star"),
        ("+ plus", "plus"),
        ("1. number dot", "number dot"),
        ("12) number paren", "number paren"),
        ("   - indented", "indented"),
        ("-", ""),
        ("-dash without space", "-dash without space"),
        ("**bold** start", "**bold** start"),
        ("- - two markers", "- two markers"),
        ("3.11 is a version", "3.11 is a version"),
    ],
)
def test_strip_bullet(line: str, item: str) -> None:
    assert strip_bullet(line) == item


def test_items_are_non_empty_non_heading_lines_with_markers_removed() -> None:
    body = "- a\n\n  * nested\n### Heading\n#\n1. b\nplain line\n- \n"
    assert split_items(body) == ["a", "nested", "b", "plain line"]


@pytest.mark.parametrize(
    ("line", "heading"),
    [("# x", True), ("### x", True), ("#", True), ("  ## x", True), ("#hashtag", False)],
)
def test_is_heading(line: str, heading: bool) -> None:
    assert is_heading(line) is heading


def test_an_item_with_newlines_is_one_item_per_non_blank_line() -> None:
    assert item_lines("first\n\n- second\n  * third") == ["first", "second", "third"]


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        ("**Use pytest**.", "use pytest", True),
        ("Use **pytest**.", "use pytest", False),
        ("- `module_1.py`", "module_1.py", True),
        ("module_1.py", "module1.py", False),
        ("ＡＢＣ", "abc", True),
        ("Straße", "STRASSE", True),
        ("a   b\tc", "a b c", True),
        ("done!", "done?", True),
        ("a", "a b", False),
        ("_x_", "x", True),
        ("a_b", "ab", False),
        ("1) step", "step", True),
        ("\u3000x\u00a0y", "x y", True),
    ],
)
def test_normalised_equality(left: str, right: str, equal: bool) -> None:
    assert (normalise(left) == normalise(right)) is equal


def test_fresh_items_skip_present_and_repeated_items_in_order() -> None:
    body = "- Use pytest\n- keep app/wm pure"
    assert fresh_items(body, ["use PYTEST.", "new", "New", "Keep app/wm pure", "other", ""]) == [
        "new",
        "other",
    ]


def test_a_single_letter_is_not_a_duplicate_of_everything() -> None:
    assert fresh_items("- a long item containing a", ["a"]) == ["a"]


@pytest.mark.parametrize(
    ("body", "items", "result"),
    [
        ("", ["a", "b"], "- a\n- b"),
        ("- x", ["a"], "- x\n- a"),
        ("- x", [], "- x"),
        ("", [], ""),
    ],
)
def test_append_items(body: str, items: list[str], result: str) -> None:
    assert append_items(body, items) == result


def test_render_items() -> None:
    assert render_items(["a", "b"]) == "- a\n- b"


@pytest.mark.parametrize(
    ("item", "markers", "text"),
    [
        ("[resolved] fixed it", {Marker.RESOLVED}, "fixed it"),
        ("- [Done] shipped", {Marker.DONE}, "shipped"),
        ("[lifted] [kept constraint] never X", {Marker.LIFTED, Marker.KEPT_CONSTRAINT}, "never X"),
        ("[silently dropped, restored] q", {Marker.RESTORED}, "q"),
        ("see [resolved] later", set(), "see [resolved] later"),
        ("plain", set(), "plain"),
    ],
)
def test_markers_are_leading_only(item: str, markers: set[Marker], text: str) -> None:
    assert markers_of(item) == markers
    assert strip_markers(item) == text


@pytest.mark.parametrize(
    ("marker", "item", "line"),
    [
        (Marker.RESTORED, "why?", "[silently dropped, restored] why?"),
        (
            Marker.RESTORED,
            "[silently dropped, restored] why?",
            "[silently dropped, restored] why?",
        ),
        (Marker.KEPT_CONSTRAINT, "- [kept constraint] never X", "[kept constraint] never X"),
        (Marker.KEPT_CONSTRAINT, "[resolved] never X", "[kept constraint] never X"),
    ],
)
def test_markers_never_double(marker: Marker, item: str, line: str) -> None:
    assert with_marker(marker, item) == line


@pytest.mark.parametrize(
    ("item", "key"),
    [
        ("Why does the `parser` fail?", "why does the `parser` fail?"),
        ("[resolved] **Bold** start", "bold** start"),
        ("_x_", "x"),
        ("- " + "a" * 50, "a" * 40),
        ("[kept constraint] Never use tabs", "never use tabs"),
        ("x" * 39 + " *tail", "x" * 39),
    ],
)
def test_snippets(item: str, key: str) -> None:
    assert snippet(item) == key


def test_a_snippet_is_a_substring_of_its_lower_cased_item_even_across_a_final_sigma() -> None:
    item = "A" * 38 + "ΟΣΑ"
    assert snippet(item) in item.lower()
    assert is_kept(item, f"- {item}".lower())


def test_is_kept_looks_for_the_snippet_in_lower_cased_content() -> None:
    assert is_kept("[resolved] Check THE parser", "- check the parser again")
    assert not is_kept("check the lexer", "- check the parser")
