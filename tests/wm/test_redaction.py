"""Redacting working-memory items by the seq of the message they were drawn from."""

from __future__ import annotations

import pytest

from app.wm.provenance import ItemSource, SectionSources
from app.wm.redaction import REDACTED, redact_section

SOURCES: SectionSources = (
    ItemSource("User: my password=hunter2", (3,)),
    ItemSource("Goal: fix invoice.py", (1, 3), (1,)),
    ItemSource("Files: invoice.py", (1,)),
)
BODY = "- User: my password=hunter2\n  * Goal: fix invoice.py\n### Heading\n\n- Files: invoice.py"


@pytest.mark.parametrize(
    ("seq", "body", "items"),
    [
        # Its only source, and one of two: both redacted, bullets and indentation kept.
        (
            3,
            f"- {REDACTED}\n  * {REDACTED}\n### Heading\n\n- Files: invoice.py",
            [REDACTED, REDACTED, "Files: invoice.py"],
        ),
        (
            1,
            f"- User: my password=hunter2\n  * {REDACTED}\n### Heading\n\n- {REDACTED}",
            ["User: my password=hunter2", REDACTED, REDACTED],
        ),
    ],
)
def test_items_drawn_from_the_message_are_redacted(seq: int, body: str, items: list[str]) -> None:
    redacted = redact_section(BODY, SOURCES, seq)
    assert redacted is not None
    assert redacted[0] == body
    assert [source.item for source in redacted[1]] == items
    # Sources keep their seqs and evidence: provenance still says where an item came from.
    assert [source.seqs for source in redacted[1]] == [source.seqs for source in SOURCES]
    assert redacted[1][1].evidence == (1,)


@pytest.mark.parametrize("seq", [0, 2, 4])
def test_a_message_no_item_cites_changes_nothing(seq: int) -> None:
    assert redact_section(BODY, SOURCES, seq) is None


def test_an_item_with_markers_and_a_plain_line_body() -> None:
    # A title is one plain line; a marked item is the same item as its unmarked source.
    assert redact_section(
        "Fix the password=hunter2 login", (ItemSource("Fix the password=hunter2 login", (2,)),), 2
    ) == (
        REDACTED,
        (ItemSource(REDACTED, (2,)),),
    )
    marked = redact_section("- [resolved] token leaked", (ItemSource("token leaked", (5,)),), 5)
    assert marked is not None
    assert marked[0] == f"- {REDACTED}"
