"""Redacting working-memory items: every item drawn from a redacted message becomes ``[redacted]``.

An item is drawn from a message when its stored sources name the message's seq. An item drawn
from the redacted message and from others is redacted too: a summary may quote any of its
sources, and a redaction that leaves a quote behind is no redaction. The item keeps its place,
its bullet and its sources (so provenance still says where it came from). Pure.
"""

from __future__ import annotations

from typing import Final

from app.wm.items import is_heading, strip_bullet
from app.wm.provenance import ItemSource, SectionSources, source_key

REDACTED: Final = "[redacted]"


def redact_section(
    body: str, sources: SectionSources, seq: int
) -> tuple[str, SectionSources] | None:
    """The body and sources with every item citing ``seq`` replaced by ``[redacted]``; ``None``
    when no item cites it (nothing to change)."""
    drawn = {source_key(source.item) for source in sources if seq in source.seqs}
    if not drawn:
        return None
    lines: list[str] = []
    for line in body.splitlines():
        item = strip_bullet(line)
        if item and not is_heading(line) and source_key(item) in drawn:
            line = line[: line.index(item)] + REDACTED
        lines.append(line)
    redacted = tuple(
        ItemSource(REDACTED, source.seqs, source.evidence)
        if source_key(source.item) in drawn
        else source
        for source in sources
    )
    return "\n".join(lines), redacted
