"""The word diff of the archive page: a table of old and new texts and the expected segments."""

from __future__ import annotations

import itertools

import pytest

from app.audit.diff import Segment, word_diff, words


def marked(segments: tuple[Segment, ...]) -> str:
    marks = {"same": "{}", "added": "[+{}]", "removed": "[-{}]"}
    return "".join(marks[segment.kind].format(segment.text) for segment in segments)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("", "", ""),
        ("", "- a new item", "[+- a new item]"),
        ("- gone", "", "[-- gone]"),
        ("same text", "same text", "same text"),
        ("keep the words", "keep all the words", "keep[+ all] the words"),
        ("Weekend plans", "Billing plans", "[-Weekend][+Billing] plans"),
        ("one two three", "four five six", "[-one two three][+four five six]"),
        ("a b c d e", "a x y z w", "[-a b c d e][+a x y z w]"),
        ("a b c d e", "a b c z w", "a b c [-d][+z] [-e][+w]"),
        (
            "- app/a.py\n- app/b.py",
            "- app/a.py\n- app/c.py",
            "- app/a.py\n- [-app/b.py][+app/c.py]",
        ),
        ("a  b", "a b", "a[-  ][+ ]b"),
        # an APPEND after a last line without a line break: that line is unchanged
        (
            "- a",
            "- a\n- b\n- c long words here\n- d more words\n- e",
            "- a[+\n- b\n- c long words here\n- d more words\n- e]",
        ),
        (
            "- Goal: fix it\n- Never touch prod",
            "- Goal: fix it\n- Never touch prod\n- Use tabs\n- Keep the API\n- Ship by Friday",
            "- Goal: fix it\n- Never touch prod[+\n- Use tabs\n- Keep the API\n- Ship by Friday]",
        ),
        ("- a\n", "- a", "- a[-\n]"),
        ("- a\r\n- b", "- a\n- b", "- a[-\r\n][+\n]- b"),
        ("<b>x</b> & y", "<b>x</b> & z", "<b>x</b> & [-y][+z]"),
    ],
)
def test_word_diff(old: str, new: str, expected: str) -> None:
    segments = word_diff(old, new)
    assert marked(segments) == expected
    assert "".join(s.text for s in segments if s.kind != "removed") == new
    assert "".join(s.text for s in segments if s.kind != "added") == old
    assert all(a.kind != b.kind for a, b in itertools.pairwise(segments))


def test_words_keep_every_character() -> None:
    text = "- one\n\n  two\tthree "
    assert "".join(words(text)) == text
    assert words("a b") == ["a", " ", "b"]


def test_a_repeated_marker_is_not_ignored_as_junk() -> None:
    """difflib's autojunk would treat a word on over 1 % of 200+ lines as noise."""
    old = "\n".join(f"- item {n}" for n in range(300))
    new = old.replace("- item 150", "- item 150 changed")
    segments = word_diff(old, new)
    assert [s.text for s in segments if s.kind != "same"] == [" changed"]


def test_a_long_changed_passage_is_shown_whole() -> None:
    """One changed line of over a thousand words each side: no word-by-word search."""
    old = " ".join(["word"] * 1200)
    new = " ".join(["word"] * 1199 + ["other"])
    assert [s.kind for s in word_diff(old, new)] == ["removed", "added"]
    shorter = " ".join(["word"] * 900)
    assert [s.text for s in word_diff(shorter, shorter + " other") if s.kind != "same"] == [
        " other"
    ]


def test_lines_are_matched_before_words() -> None:
    old = "- a\n- b\n- c\n"
    new = "- a\n- c\n- d\n"
    assert marked(word_diff(old, new)) == "- a\n[-- b\n]- c\n[+- d\n]"
