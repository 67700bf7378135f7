"""What a filled context's reduced summary displaces, as tables over small conversations."""

from __future__ import annotations

from dataclasses import replace

from app.context.assembly import Hint, Window, assemble
from app.context.budget import Budget
from app.context.fill import choose_fill, with_fill
from app.context.share import displaced, displaced_terms, is_reduced
from app.wm.tokens import count_tokens
from tests.support.assembly import full_sections, stored, summarised

HINT = Hint("", "")


def _conversation() -> list:  # type: ignore[type-arg]
    texts = [
        ("user", "Book flight HAT001 for alice_1"),
        ("assistant", "Booked HAT001, reservation R1A2B3"),
        ("user", "Now HAT002 for bob_2 please"),
        ("assistant", "Booked HAT002, reservation Q9W8E7"),
        ("user", "Thanks, that is all"),
    ]
    return [stored(i, {"role": r, "content": t}, 20) for i, (r, t) in enumerate(texts, 1)]


def test_displaced_are_the_newest_covered_messages_older_than_the_fill() -> None:
    messages = _conversation()
    covered, tail = messages[:4], messages[4:]
    assembly = assemble(
        Budget(600, 0),
        Window(tail, 4, 5),
        working_memory=summarised(full_sections()),
        hint=HINT,
        counter=count_tokens,
    )
    assert is_reduced(assembly)
    filled = with_fill(assembly, choose_fill(covered, 20))
    assert [m.seq for m in filled.filled] == [4]
    # Room for truncation at 100 tokens beside the 20 raw tokens sent and the 20 filled: 60, so
    # three more covered messages, the three older than the fill.
    gone = displaced(covered, filled, 100, count_tokens)
    assert [m.seq for m in gone] == [1, 2, 3]
    assert displaced_terms(gone) == ["HAT002", "bob_2", "HAT001", "R1A2B3", "alice_1"]
    # Nothing filled: the walk starts at the summary's boundary.
    assert [m.seq for m in displaced(covered, assembly, 60, count_tokens)] == [3, 4]


def test_a_summary_sent_whole_or_not_at_all_is_not_reduced() -> None:
    messages = _conversation()
    whole = assemble(
        Budget(100_000, 0),
        Window(messages[4:], 4, 5),
        working_memory=summarised(full_sections()),
        hint=HINT,
        counter=count_tokens,
    )
    assert whole.summary is not None
    assert not whole.summary.cuts
    assert not is_reduced(whole)
    assert not is_reduced(replace(whole, summary=None))
