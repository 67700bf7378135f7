"""The trailing reference of an item, ``(#12, #15)``: grammar, range, and writing it back."""

from __future__ import annotations

import pytest

from app.wm.references import (
    MAX_SEQS_PER_ITEM,
    Cited,
    SeqRange,
    cite,
    normalised_seqs,
    reference,
    with_reference,
)

COVERED = SeqRange(1, 40)

# (item, text after the reference is taken off, seqs kept, seqs outside the range)
CASES = [
    # valid
    ("Never deploy on Fridays (#12)", "Never deploy on Fridays", (12,), ()),
    ("Never deploy on Fridays (#12, #15)", "Never deploy on Fridays", (12, 15), ()),
    ("Never deploy on Fridays (#15,#12)", "Never deploy on Fridays", (12, 15), ()),
    ("Never deploy on Fridays (#12; #15)", "Never deploy on Fridays", (12, 15), ()),
    ("Never deploy on Fridays (#12 #15)", "Never deploy on Fridays", (12, 15), ()),
    ("Never deploy on Fridays ( #12 , #15, )", "Never deploy on Fridays", (12, 15), ()),
    ("Never deploy on Fridays (#12).", "Never deploy on Fridays", (12,), ()),
    ("Never deploy on Fridays.(#12)  ", "Never deploy on Fridays.", (12,), ()),
    # at the edges of the range
    ("first (#1)", "first", (1,), ()),
    ("last (#40)", "last", (40,), ()),
    # out of range: stripped, reported, never kept
    ("below (#0)", "below", (), (0,)),
    ("above (#41)", "above", (), (41,)),
    ("mixed (#3, #41, #99)", "mixed", (3,), (41, 99)),
    ("huge (#123456789012345678)", "huge", (), (123456789012345678,)),
    # duplicated
    ("twice (#7, #7)", "twice", (7,), ()),
    ("twice (#7, #3, #7, #3)", "twice", (3, 7), ()),
    # malformed: text, left as it is
    ("no number (#)", "no number (#)", (), ()),
    ("a space (# 12)", "a space (# 12)", (), ()),
    ("a word (#12, see)", "a word (#12, see)", (), ()),
    ("a range (#12-#15)", "a range (#12-#15)", (), ()),
    ("unclosed (#12", "unclosed (#12", (), ()),
    ("bare #12", "bare #12", (), ()),
    ("no hash (12)", "no hash (12)", (), ()),
    ("too long (#1234567890123456789)", "too long (#1234567890123456789)", (), ()),
    ("brackets [#12]", "brackets [#12]", (), ()),
    ("not at the end (#12) of the item", "not at the end (#12) of the item", (), ()),
    ("", "", (), ()),
    # inside code spans: text
    ("run `grep (#12)`", "run `grep (#12)`", (), ()),
    ("run `grep '(#12)'", "run `grep '(#12)'", (), ()),
    ("`a` then `b (#3)", "`a` then `b (#3)", (), ()),
    # after a closed code span: a reference
    ("ran `make test` (#3)", "ran `make test`", (3,), ()),
    ("regex `\\(#\\d+\\)` (#4)", "regex `\\(#\\d+\\)`", (4,), ()),
    # only the last group is the reference
    ("Fix bug (#1234) (#5)", "Fix bug (#1234)", (5,), ()),
]


@pytest.mark.parametrize(("item", "text", "seqs", "outside"), CASES)
def test_cite(item: str, text: str, seqs: tuple[int, ...], outside: tuple[int, ...]) -> None:
    assert cite(item, COVERED) == Cited(text, seqs, outside)


def test_a_reference_alone_leaves_no_text() -> None:
    assert cite("(#3)", COVERED) == Cited("", (3,))


def test_the_range_includes_both_ends_and_only_numbers() -> None:
    assert 1 in COVERED
    assert 40 in COVERED
    assert 0 not in COVERED
    assert 41 not in COVERED
    assert "12" not in COVERED


def test_an_item_keeps_its_newest_sources_up_to_the_cap() -> None:
    many = range(1, MAX_SEQS_PER_ITEM + 21)
    kept = normalised_seqs(many)
    assert len(kept) == MAX_SEQS_PER_ITEM
    assert kept[0] == 21
    assert kept[-1] == MAX_SEQS_PER_ITEM + 20
    assert normalised_seqs([5, 3, 5]) == (3, 5)


def test_a_long_run_of_spaces_is_read_in_linear_time() -> None:
    # A model controls the text: a pathological one must not make the search quadratic.
    item = "x (#1" + " " * 50_000 + "y"
    assert cite(item, COVERED) == Cited(item)


@pytest.mark.parametrize(
    ("seqs", "written"),
    [((), ""), ((12,), "(#12)"), ((15, 12, 12), "(#12, #15)")],
)
def test_reference_is_written_back_as_cite_reads_it(seqs: tuple[int, ...], written: str) -> None:
    assert reference(seqs) == written
    item = with_reference("Use tabs", seqs)
    assert item == (f"Use tabs {written}" if written else "Use tabs")
    assert cite(item, COVERED) == Cited("Use tabs", normalised_seqs(seqs))
