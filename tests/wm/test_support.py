"""Content words, the support threshold at its edge, and constraint polarity."""

from __future__ import annotations

import pytest

from app.wm.support import (
    SUPPORT_MIN_OVERLAP,
    content_words,
    opposes,
    overlap,
    polarity,
    same_claim,
    supported,
)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Never push directly to main.", {"push", "directly", "main"}),
        ("We must keep Python 3.8 support", {"python", "3.8", "support"}),
        ("Edit app/billing/models.py now", {"edit", "app/billing/models.py"}),
        ("Don't use tabs", {"tabs"}),
        ("I", set()),
        ("x 7", {"7"}),
    ],
)
def test_content_words(text: str, words: set[str]) -> None:
    assert content_words(text) == frozenset(words)


def test_the_threshold_is_a_half() -> None:
    assert SUPPORT_MIN_OVERLAP == 0.5


@pytest.mark.parametrize(
    ("item", "source", "share", "ok"),
    [
        # four content words: 2 found is at the threshold, 1 below, 3 above
        ("alpha beta gamma delta", "alpha beta", 0.5, True),
        ("alpha beta gamma delta", "alpha", 0.25, False),
        ("alpha beta gamma delta", "alpha beta gamma", 0.75, True),
        # three content words: 1 of 3 is below, 2 of 3 above
        ("Always push directly to main", "we must keep Python 3.8 support", 0.0, False),
        ("Always push directly to main", "push it to main", 2 / 3, True),
        ("Always push directly to main", "push it", 1 / 3, False),
        # nothing to check: an item of stop-words only
        ("Do it now", "anything", 1.0, True),
    ],
)
def test_support_at_the_edge(item: str, source: str, share: float, ok: bool) -> None:
    assert overlap(item, [source]) == pytest.approx(share)
    assert supported(item, [source]) is ok


def test_support_reads_every_source_together() -> None:
    assert supported("alpha beta gamma delta", ["alpha", "beta"])
    assert not supported("alpha beta gamma delta", ["alpha"])


@pytest.mark.parametrize(
    ("text", "sign"),
    [
        ("Never push directly to main", -1),
        ("Don't use tabs", -1),
        ("do not deploy on Fridays", -1),
        ("You must not commit secrets", -1),
        ("No longer use the old API", -1),
        ("Always push directly to main", 1),
        ("Use spaces", 1),
        ("We must keep Python 3.8 support", 1),
        ("The build is green", 0),
        ("不要删除文件", -1),
        ("必须使用中文", 1),
    ],
)
def test_polarity(text: str, sign: int) -> None:
    assert polarity(text) == sign


@pytest.mark.parametrize(
    ("item", "other", "opposite"),
    [
        ("Always push directly to main", "Never push directly to main", True),
        ("Use tabs", "Don't use tabs", True),
        ("You must run the tests", "You must not run the tests", True),
        ("Always push directly to main", "Never deploy on Fridays", False),
        ("Never push directly to main", "Never push directly to main", False),
        ("Always push directly to main", "The main branch is protected", False),
        # half the words shared both ways: at the threshold, opposite
        ("Always push main", "Never push release", True),
        # a third shared: below it
        ("Always push main branch", "Never push release tag", False),
    ],
)
def test_opposes(item: str, other: str, opposite: bool) -> None:
    assert opposes(item, other) is opposite


@pytest.mark.parametrize(
    ("item", "other", "same"),
    [
        ("Never push directly to main.", "Do not push to main directly", True),
        ("Never push directly to main.", "Always push directly to main", False),
        ("Never push directly to main.", "Never deploy on Fridays", False),
    ],
)
def test_same_claim(item: str, other: str, same: bool) -> None:
    assert same_claim(item, other) is same
