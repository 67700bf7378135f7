"""An archive's ``.overview.md``: front matter, and whether the body is a working memory.

A body whose parse finds all seven section headers is a working memory (read exactly as the
service and the legacy-upgrading migration read one); any other non-empty text is a legacy
overview, kept whole for the next commit to upgrade. Pure: text in, ``Overview`` out.
"""

from __future__ import annotations

from app.importer.openviking.records import NO_OVERVIEW, Overview, OverviewKind
from app.wm.sections import SECTIONS, parse

ABSTRACT_CHARS = 200


def strip_front_matter(text: str) -> str:
    """The body: a front matter block exists only when the first line is exactly ``---``, and
    ends at the next ``---`` line; one blank line after it belongs to neither."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        return text
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r") == "---":
            body = lines[index + 1 :]
            if body and not body[0].strip():
                body = body[1:]
            return "\n".join(body)
    return text


def read_overview(text: str) -> Overview:
    body = strip_front_matter(text).strip()
    if not body:
        return NO_OVERVIEW
    document = parse(body)
    if document.found == frozenset(SECTIONS):
        return Overview(OverviewKind.V2, body + "\n", document)
    return Overview(OverviewKind.LEGACY, body + "\n")


def legacy_abstract(text: str) -> str:
    """One line for archive listings, chosen as OpenViking chose it: the first
    ``**Label**: value`` line, else the first line that is not a heading."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    labelled = next((line for line in lines if line.startswith("**") and "**:" in line), None)
    chosen = labelled or next((line for line in lines if not line.startswith("#")), "")
    if len(chosen) <= ABSTRACT_CHARS:
        return chosen
    return chosen[: ABSTRACT_CHARS - 1].rstrip() + "…"
