"""The seven sections of a working memory: their order, canonical rendering and tolerant parsing.

Owns the document shape of DESIGN 3.1 and the parsing decisions of 3.7. Never judges content:
anything it does not recognise is kept aside (``preamble``, ``extra``), never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final


class Section(StrEnum):
    SESSION_TITLE = "Session Title"
    CURRENT_STATE = "Current State"
    TASK_AND_GOALS = "Task & Goals"
    KEY_FACTS = "Key Facts & Decisions"
    FILES = "Files & Context"
    ERRORS = "Errors & Corrections"
    OPEN_ISSUES = "Open Issues"


SECTIONS: Final[tuple[Section, ...]] = tuple(Section)
DOCUMENT_TITLE: Final = "Working Memory"

_HEADING = re.compile(r"^(#+)\s+(.*)$")
_NUMBERING = re.compile(r"^\d{1,2}[.)]\s+")
_PARENTHESISED_SUFFIX = re.compile(r"\s*\([^()]*\)$")
_BY_NAME: Final[dict[str, Section]] = {section.value.casefold(): section for section in SECTIONS}


@dataclass(frozen=True, slots=True)
class ExtraSection:
    """A ``## <other name>`` section: not one of the seven, kept so that nothing is lost."""

    heading: str
    body: str


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """A Markdown text read as seven bodies, plus what did not belong to any of them."""

    sections: Mapping[Section, str]
    preamble: str = ""
    extra: tuple[ExtraSection, ...] = ()
    found: frozenset[Section] = field(default_factory=frozenset)


def empty_sections() -> dict[Section, str]:
    return dict.fromkeys(SECTIONS, "")


def render(bodies: Mapping[Section, str]) -> str:
    """Canonical Markdown: title, then every header with its body; one trailing newline."""
    parts = [f"# {DOCUMENT_TITLE}", ""]
    for section in SECTIONS:
        parts.append(f"## {section.value}")
        body = bodies.get(section, "").strip()
        if body:
            parts.append(body)
        parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def heading_name(text: str) -> str:
    """A heading's name without decorations: ``**``, trailing ``:``, ``(3)``, leading ``1.``."""
    name = text.strip()
    while True:
        if len(name) >= 4 and name.startswith("**") and name.endswith("**"):
            name = name[2:-2].strip()
        elif name.endswith(":"):
            name = name[:-1].strip()
        elif (suffix := _PARENTHESISED_SUFFIX.search(name)) is not None and suffix.start() > 0:
            name = name[: suffix.start()].strip()
        else:
            break
    name = _NUMBERING.sub("", name)
    return " ".join(name.split())


def section_for(name: str) -> Section | None:
    return _BY_NAME.get(" ".join(name.split()).casefold())


def parse(markdown: str) -> ParsedDocument:
    """Read Markdown by the rules of DESIGN 3.1 and 3.7; never raises, never drops text."""
    bodies: dict[Section, list[str]] = {section: [] for section in SECTIONS}
    preamble: list[str] = []
    extras: list[tuple[str, list[str]]] = []
    found: set[Section] = set()
    current: list[str] = preamble
    for line in markdown.splitlines():
        match = _HEADING.match(line.strip())
        if match is None:
            current.append(line)
            continue
        level = len(match.group(1))
        name = heading_name(match.group(2))
        section = section_for(name)
        if level == 1 and name.casefold() == DOCUMENT_TITLE.casefold():
            continue
        if level >= 2 and section is not None:
            found.add(section)
            current = bodies[section]
        elif level == 2:
            extras.append((match.group(2).strip(), []))
            current = extras[-1][1]
        else:
            current.append(line)
    return ParsedDocument(
        sections={section: _join(lines) for section, lines in bodies.items()},
        preamble=_join(preamble),
        extra=tuple(ExtraSection(heading, _join(lines)) for heading, lines in extras),
        found=frozenset(found),
    )


def canonical_body(body: str) -> str:
    """The body in the form that parses back as itself.

    A line that would open a section or an extra section, or pass for the document title, is
    kept as bold text instead: its words stay, but it can no longer move the lines after it
    into another section when the rendered document is read again.
    """
    lines: list[str] = []
    for line in body.splitlines():
        match = _HEADING.match(line.strip())
        if match is not None and _is_structural(len(match.group(1)), match.group(2)):
            line = f"**{heading_name(match.group(2))}**"
        lines.append(line)
    return _join(lines)


def _is_structural(level: int, text: str) -> bool:
    name = heading_name(text)
    if level == 1:
        return name.casefold() == DOCUMENT_TITLE.casefold()
    return level == 2 or section_for(name) is not None


def _join(lines: list[str]) -> str:
    return "\n".join(lines).strip()
