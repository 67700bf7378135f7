"""Lexical anchors of Key Facts (guard B) and meaningful title words (guard A)."""

from __future__ import annotations

import pytest

from app.wm.anchors import PROPER_NOUN_STOP_WORDS, anchor_spans, anchors, title_words


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("released on 2024-05-20.", {"2024-05-20"}),
        ("met on 7 May 2023 and 12 december, 2022", {"7 may 2023", "12 december 2022"}),
        ("They have 3 kids and 1 child", {"3 kids"}),
        (
            "2 children, 4 people, 1 person, 3 bedrooms",
            {"2 children", "4 people", "1 person", "3 bedrooms"},
        ),
        ("5 Years and 10 minutes", {"5 years", "years", "10 minutes"}),
        ("it costs $1,200.50 or $3", {"$1,200.50", "$3"}),
        ("call at 10am or 3:30 PM", {"10 am", "3:30 pm"}),
        ("We DECIDED this because it was agreed", {"decided", "because", "agreed"}),
        ("He chose it; she committed; it resolved", {"chose", "committed", "resolved"}),
        ("OpenAI and McCloud met Éric", {"openai", "mccloud", "éric"}),
        ("The This That These You We It May Also Then When", set()),
        ("Key Facts Decisions Session Working Memory New Old", set()),
        ("Ab is short, ABC is not", {"abc"}),
        ("A1b is not a name", set()),
        ("Flight HAT136 leaves", {"flight", "hat136"}),
        ("upgrade to v2.3.1 and Python 3.11", {"v2.3.1", "python", "3.11"}),
        ("use `merge_report` and `x y`", {"merge_report", "x y"}),
        ("blank ` ` code", set()),
        ("Released today", {"released"}),
        ("北京ABC and 東京", set()),
        ("snake_Case words", {"case"}),
    ],
)
def test_anchors(text: str, expected: set[str]) -> None:
    assert anchors(text) == expected


def test_anchor_spans_keep_surface_forms_and_kinds_in_text_order() -> None:
    spans = anchor_spans("On 8 May, 2023 OpenAI paid $5 because of `cfg`")
    assert [(s.surface, s.key, s.kind) for s in spans] == [
        ("8 May, 2023", "8 may 2023", "date"),
        ("OpenAI", "openai", "proper_noun"),
        ("$5", "$5", "amount"),
        ("because", "because", "decision"),
        ("`cfg`", "cfg", "identifier"),
    ]


def test_the_proper_noun_stop_list_holds_about_a_hundred_function_words() -> None:
    assert len(PROPER_NOUN_STOP_WORDS) >= 100
    assert {"the", "this", "that", "these", "you", "we", "it", "may", "also", "then", "when"} <= (
        PROPER_NOUN_STOP_WORDS
    )


@pytest.mark.parametrize(
    ("title", "words"),
    [
        ("Fix the login bug", {"fix", "login", "bug"}),
        ("Setup.", {"setup"}),
        ("node.js v2 migration", {"node.js", "2", "migration"}),
        ("Session notes: working memory plan", set()),
        ("The A an of", set()),
        ("2024-05-20 release", {"2024", "05", "20", "release"}),
        ("Flight UA123", {"flight", "ua123", "123"}),
        ("修复登录问题", {"修复", "复登", "登录", "录问", "问题"}),
        ("修", set()),
        ("カタカナ", {"カタ", "タカ", "カナ"}),
        ("한국어 지원", {"한국", "국어", "지원"}),
        ("Python 3.11 upgrade", {"python", "3", "11", "upgrade"}),
        ("ab. cd", set()),
        ("Café crème", {"café", "crème"}),
        ("Привет мир", {"привет", "мир"}),
    ],
)
def test_title_words(title: str, words: set[str]) -> None:
    assert title_words(title) == words
