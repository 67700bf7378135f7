"""The docs list what the code uses: the stop-word lists and every reason code."""

from __future__ import annotations

from pathlib import Path

from app.wm.anchors import PROPER_NOUN_STOP_WORDS, TITLE_STOP_WORDS
from app.wm.reasons import Reason

DOC = Path(__file__).resolve().parent.parent / "docs" / "working-memory.md"


def test_stop_words_and_reasons_are_documented() -> None:
    text = DOC.read_text()
    proper_nouns = text.split("so that sentence openers do not count as names:", 1)[1]
    listed = {word.strip(" .\n") for word in proper_nouns.replace("\n", " ").split(",")}
    assert listed == set(PROPER_NOUN_STOP_WORDS)
    title_line = next(line for line in text.splitlines() if line.startswith("Meaningful title"))
    title_words = {w.strip(" .") for w in title_line.split(":", 1)[1].split(",")}
    assert title_words == set(TITLE_STOP_WORDS)
    for reason in Reason:
        assert f"`{reason.value}`" in text, reason
