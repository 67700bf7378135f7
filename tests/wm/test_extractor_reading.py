"""What the rules read of a text once: the lines holding a word, a sentence's specific tokens,
the anchors of many lines; each the same as reading the whole text."""

from __future__ import annotations

import re

import pytest

from app.wm.anchors import anchors, lines_anchors
from app.wm.extractor.constraints import is_constraint_sentence, is_preference_sentence
from app.wm.extractor.errors import _error_lines
from app.wm.extractor.key_facts import fact_score
from app.wm.extractor.reading import lines_holding
from app.wm.paths import find_paths

_WORD = re.compile("x")


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("no hit", []),
        ("x", ["x"]),
        ("a\nx1 x2\nb\n\nx3\n", ["x1 x2", "x3"]),
        ("x\n", ["x"]),
        ("a\nb x", ["b x"]),
        # Other line breaks cut lines as splitlines does ("\r\n" is one break).
        ("a\r\nx\r\nb", ["x"]),
        ("x1\r\n\r\nx2\r", ["x1", "x2"]),
        ("a\rx\x85b", ["x"]),
        ("a\u2028x", ["x"]),
        ("a\x0cb\nx\x1cx", ["x", "x"]),
    ],
)
def test_lines_holding(text: str, lines: list[str]) -> None:
    assert list(lines_holding(text, _WORD.finditer(text))) == lines


@pytest.mark.parametrize(
    ("text", "tool_output", "lines"),
    [
        ("ok\nall good\n", True, []),
        (
            "collected 3\nFAILED test_a\nok\nfatal: no repo\n",
            True,
            ["FAILED test_a", "fatal: no repo"],
        ),
        (
            "x\r\nTraceback (most recent call last):\r\n",
            True,
            ["Traceback (most recent call last):"],
        ),
        ("ok\nERROR: disk full\n- failure: retry\n", True, ["ERROR: disk full", "failure: retry"]),
        ("12: raise KeyError(x)\nKeyError: 'email'", True, ["KeyError: 'email'"]),
        ("café ok\nFAILED: naïve test", True, ["FAILED: naïve test"]),
        (
            "x\nTRACEBAC\u212a (most recent call last):",
            True,
            ["TRACEBAC\u212a (most recent call last):"],
        ),
        ("all fine, no ERRORS here", True, []),
        ("Ok\nfatal: not a git repository", True, ["fatal: not a git repository"]),
        ("the error is fixed\nfailed once", False, []),
        ("It says\nValueError: bad input\nthen nothing", False, ["ValueError: bad input"]),
        ("Exception:\nMyException: boom", False, ["MyException: boom"]),
    ],
)
def test_error_lines_are_the_lines_holding_an_error_word(
    text: str, tool_output: bool, lines: list[str]
) -> None:
    assert _error_lines(text, tool_output=tool_output) == lines


@pytest.mark.parametrize(
    ("sentence", "score"),
    [
        ("we went there", 0),
        ("Alice booked HAT136 on 2024-05-01 because of `ticket_7`", 6),
        ("Élodie booked HAT136 on 2024-05-01 because of `ticket_7`", 6),
        ("abc123 and x.abc123 differ", 2),
        ("Paid $1,200.50 for v2.3", 4),
        ("Because it DECIDED nothing", 2),
        ("decidedly not", 0),
        ("Ünïcode wörds like Zürich", 3),
        ("café ²3 a٣b", 3),
    ],
)
def test_fact_score_reads_ascii_and_other_text_alike(sentence: str, score: int) -> None:
    assert fact_score(sentence, frozenset()) == score


@pytest.mark.parametrize(
    "lines",
    [
        [],
        ["Alice paid $3."],
        ["Alice paid $3.", "Bob met Carol on 2024-05-01."],
        ["they stayed 5", "days in Paris"],
        ["they stayed 5 ", "days in Paris"],
        ["met on 7", "May 2023"],
        ["met on 7 May", "2023 was good"],
        ["met on 7 May,", "2023 was good"],
        ["call at 3", "pm"],
        ["ends in 5", "", "years"],
        ["no run on here.", "5 years"],
    ],
)
def test_lines_anchors_are_the_anchors_of_the_joined_lines(lines: list[str]) -> None:
    assert lines_anchors(lines) == anchors("\n".join(lines))


@pytest.mark.parametrize(
    ("sentence", "constraint", "preference"),
    [
        ("You muſt use tabs", True, False),
        ("It muſt have left early", False, False),
        ("It must have left early", False, False),
        ("I would RATHER use tabs", False, True),
        ("I ſtill prefer tabs", False, True),
        ("We PREFER tabs over spaces", False, True),
        ("Do we rather not use it", False, True),
        ("Keep the tests green", False, False),
        ("Never touch prod", True, False),
        ("I prefer tabs?", False, False),
    ],
)
def test_constraints_and_preferences_in_any_case(
    sentence: str, constraint: bool, preference: bool
) -> None:
    assert is_constraint_sentence(sentence, chat=False) is constraint
    assert is_preference_sentence(sentence) is preference


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("stayed ٣ days", {"٣ days"}),
        ("no digits at all, Alice", {"alice"}),
        ("v١.٢ and $5 at 5pm on 2024-01-02", {"$5", "2024-01-02", "5 pm", "v١.٢"}),
        ("a `code` span", {"code"}),
        ("a ` lone backtick", set()),
    ],
)
def test_anchors_with_and_without_digits(text: str, expected: set[str]) -> None:
    assert anchors(text) == expected


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        ("café/menu.py", ["café/menu.py"]),
        ("naïve/a/b and ok/c.md", ["naïve/a/b", "ok/c.md"]),
        ("Ünïcode.PY", ["Ünïcode.PY"]),
        ("x/ſ.sh", ["x/ſ.sh"]),
        ("plain/ascii.sh", ["plain/ascii.sh"]),
    ],
)
def test_paths_in_ascii_and_other_text(text: str, paths: list[str]) -> None:
    assert find_paths(text) == paths
