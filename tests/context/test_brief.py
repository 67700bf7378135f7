"""The brief of a reduced summary as tables: which terms count, which are left out, what fits."""

from __future__ import annotations

import pytest

from app.context.brief import (
    BRIEF_OPEN,
    brief_line,
    brief_terms,
    fit_brief,
    shown_words,
    specific_terms,
)
from app.context.summary import summarise_sections
from app.wm.sections import Section
from app.wm.tokens import count_tokens
from tests.support.assembly import full_sections


@pytest.mark.parametrize(
    ("text", "ids", "names"),
    [
        ("reservation `K1NW8N` for user mohamed_silva_9265", ["K1NW8N", "mohamed_silva_9265"], []),
        ("flight HAT023 on 2024-05-26 from JFK", ["HAT023", "2024-05-26", "JFK"], []),
        ("edit src/app/models.py and mail a.b@example.com", ["src/app/models.py", "a.b@example.com"], []),
        ("costs 1625.0 in total", ["1625.0"], []),
        ("I met Caroline and Melanie in Boston.", [], ["Caroline", "Melanie", "Boston"]),
        ("Caroline met her. She went home", [], []),  # an opening word is no name
        ("Done: Transfer; Las; Vegas", [], ["Las", "Vegas"]),  # after ':' a word opens
        ("a B of it; Ok and Yes", [], ["Yes"]),  # a name has three letters or more
        ("HAT023 and hat023 again", ["HAT023"], []),  # each term once, case aside
        ("end of sentence.", [], []),
        ("", [], []),
    ],
)  # fmt: skip
def test_specific_terms_are_ids_then_names(text: str, ids: list[str], names: list[str]) -> None:
    assert specific_terms(text) == (ids, names)


def test_brief_terms_list_ids_first_and_skip_what_is_shown() -> None:
    items = ["- booked HAT023 for Caroline", "- paid with gift_card_1 for Caroline, see K1NW8N"]
    shown = shown_words(["the raw message names k1nw8n"])
    assert brief_terms(items, shown) == ["HAT023", "gift_card_1", "Caroline"]
    assert brief_terms(items, frozenset()) == ["HAT023", "gift_card_1", "K1NW8N", "Caroline"]
    assert brief_terms([], frozenset()) == []


def test_fit_brief_takes_the_leading_terms_that_fit() -> None:
    terms = [f"ID{i:04d}" for i in range(50)]
    whole = count_tokens("\n\n" + brief_line(terms))
    assert fit_brief(terms, whole, count_tokens)[2] == 50
    line, tokens, listed = fit_brief(terms, whole - 1, count_tokens)
    assert 0 < listed < 50
    assert line == brief_line(terms[:listed])
    assert tokens == count_tokens("\n\n" + line) <= whole - 1
    assert fit_brief(terms, 0, count_tokens) == ("", 0, 0)
    assert fit_brief([], 100, count_tokens) == ("", 0, 0)
    assert fit_brief(terms, 2, count_tokens) == ("", 0, 0)  # not even the opening fits


def _reduced(extra: int) -> tuple[int, int]:
    """The layer of a summary whose Files were cut, and the tokens the cut sections take."""
    sections = full_sections()
    full = summarise_sections(sections, 100_000, count_tokens).tokens
    reduced = summarise_sections(sections, full - 1, count_tokens)
    sections_only = reduced.tokens - reduced.brief_tokens
    return sections_only + extra, sections_only


@pytest.mark.parametrize("extra", [0, 5, 40, 70])
def test_a_reduced_summary_closes_with_the_brief_of_its_cuts(extra: int) -> None:
    layer, sections_only = _reduced(extra)
    summary = summarise_sections(full_sections(), layer, count_tokens)
    assert summary.text is not None
    assert summary.tokens == count_tokens(summary.text) <= layer
    if summary.brief_terms == 0:
        assert BRIEF_OPEN not in summary.text
        assert summary.tokens == sections_only
        return
    assert summary.tokens - summary.brief_tokens == sections_only
    brief = summary.text.rstrip().splitlines()[-1]
    assert brief.startswith(BRIEF_OPEN)
    # The cut Files are listed from their newest item on, never the ones still shown.
    assert "src/billing/module_30.py" in brief
    assert "src/billing/module_20.py" not in brief


def test_the_brief_leaves_out_what_the_raw_messages_hold() -> None:
    layer, _ = _reduced(70)
    shown = shown_words(["we changed src/billing/module_30.py today"])
    summary = summarise_sections(full_sections(), layer, count_tokens, shown)
    assert summary.text is not None
    brief = summary.text.rstrip().splitlines()[-1]
    assert "src/billing/module_30.py" not in brief
    assert "src/billing/module_29.py" in brief


def test_a_summary_that_fits_whole_has_no_brief() -> None:
    sections = full_sections()
    summary = summarise_sections(sections, 100_000, count_tokens)
    assert summary.text is not None
    assert BRIEF_OPEN not in summary.text
    assert (summary.brief_terms, summary.brief_tokens) == (0, 0)


def test_a_section_cut_whole_is_briefed_by_its_terms() -> None:
    sections = {**full_sections(), Section.KEY_FACTS: "- invoice INV-2024-07 sent to Acme"}
    full = summarise_sections(sections, 100_000, count_tokens).tokens
    layer = full
    summary = summarise_sections(sections, layer, count_tokens)
    while not any(cut.section is Section.KEY_FACTS for cut in summary.cuts):
        layer -= 1
        summary = summarise_sections(sections, layer, count_tokens)
    summary = summarise_sections(sections, layer + 60, count_tokens)
    assert summary.text is not None
    if any(cut.section is Section.KEY_FACTS for cut in summary.cuts):
        assert "INV-2024-07" in summary.text.splitlines()[-1]


# What the summary displaces ----------------------------------------------------------------------


def test_the_displaced_terms_lead_the_brief_and_make_their_room() -> None:
    sections = full_sections()
    whole = summarise_sections(sections, 100_000, count_tokens)
    first = ["HAT023", "K1NW8N", "mohamed_silva_9265", "billing"]
    summary = summarise_sections(sections, whole.tokens, count_tokens, first=first)
    assert summary.text is not None
    assert summary.tokens == count_tokens(summary.text) <= whole.tokens
    # The sections were reduced to make room for the brief, which opens with the first terms.
    assert summary.cuts
    brief = summary.text.rstrip().splitlines()[-1]
    assert brief.startswith(BRIEF_OPEN + "HAT023; K1NW8N; mohamed_silva_9265")
    assert "billing;" not in brief  # the summary says it already


def test_first_terms_the_raw_messages_show_take_no_room() -> None:
    sections = full_sections()
    whole = summarise_sections(sections, 100_000, count_tokens)
    shown = shown_words(["booked hat023 today"])
    summary = summarise_sections(sections, whole.tokens, count_tokens, shown, first=["HAT023"])
    assert summary.text == whole.text
    assert (summary.cuts, summary.brief_terms) == ((), 0)


def test_a_summary_with_no_room_has_no_brief() -> None:
    assert summarise_sections(full_sections(), 0, count_tokens, first=["HAT023"]).text is None


def test_the_first_terms_may_take_at_most_half_the_layer() -> None:
    sections = full_sections()
    layer = 400
    first = [f"REF{i:05d}" for i in range(400)]
    summary = summarise_sections(sections, layer, count_tokens, first=first)
    assert summary.text is not None
    assert summary.tokens <= layer
    assert "## Open Issues" in summary.text  # the sections keep at least half
    assert 0 < summary.brief_terms < len(first)
