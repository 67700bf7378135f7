"""What the hostile models of ``app.llm.adversary`` read from their prompt and what an honest
model would answer: the numbered archived messages, the prior working memory, the offline
extractor's cited reading of the same messages, the protected items in it, and the small
mutations (an inverted constraint, a changed path or date) the attacks plant.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from app.wm.extractor import extract
from app.wm.guards import is_constraint
from app.wm.items import is_heading, split_items, strip_bullet, strip_markers
from app.wm.merge import merge
from app.wm.paths import find_paths
from app.wm.provenance import source_key
from app.wm.references import SeqRange, Seqs, cite, with_reference
from app.wm.sections import SECTIONS, Section, empty_sections, parse, render
from app.wm.support import polarity


@dataclass(frozen=True, slots=True)
class Target:
    """A protected item an attack tried to remove or corrupt: its section and its text (for
    Files & Context, a path; for Key Facts, a date)."""

    section: Section
    text: str


@dataclass(frozen=True, slots=True)
class Shown:
    """A message as the prompt shows it: its number, role and text, and a tool call's name."""

    seq: int
    role: str
    text: str
    tool: str = ""
    name: str = ""


_BLOCK = re.compile(r"^#(\d+) \[([^\]\n]+)\](:?) ?")
_PRIOR = re.compile(r"<working_memory>\n?(.*?)\n?</working_memory>", re.DOTALL)
_ARCHIVED = re.compile(r"<archived_messages>\n?(.*?)\n?</archived_messages>", re.DOTALL)
_ROLES: Final = frozenset({"user", "assistant", "system"})


def shown_messages(prompt: str) -> list[Shown]:
    """The numbered messages of a prompt, read back from how the prompt renders them. A named
    speaker is the user when it spoke first, else the assistant."""
    found = _ARCHIVED.search(prompt)
    shown: list[Shown] = []
    speakers: list[str] = []
    lines: list[str] = []
    head: tuple[int, str, str, str] | None = None

    def close() -> None:
        if head is not None:
            seq, role, tool, name = head
            shown.append(Shown(seq, role, "\n".join(lines).strip(), tool, name))

    for line in (found.group(1) if found else "").splitlines():
        start = _BLOCK.match(line)
        if start is None:
            lines.append(line)
            continue
        close()
        seq, label = int(start.group(1)), start.group(2)
        tool = name = ""
        if label.startswith("tool result:"):
            role, tool = "tool", label.removeprefix("tool result:")
        elif label.startswith("tool:"):
            role, tool = "assistant", label.removeprefix("tool:")
        elif label in _ROLES:
            role = label
        else:
            speakers += [] if label in speakers else [label]
            role = "user" if label == speakers[0] else "assistant"
            name = label
        head = (seq, role, tool, name)
        lines = [line[start.end() :]]
    close()
    return shown


def _as_message(message: Shown) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "name": message.tool, "content": message.text}
    if message.tool:
        function = {"name": message.tool, "arguments": message.text}
        call = {"id": f"c{message.seq}", "function": function}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if message.name:
        return {"role": message.role, "name": message.name, "content": message.text}
    return {"role": message.role, "content": message.text}


def prior_sections(prompt: str) -> dict[Section, str]:
    """The prior working memory a prompt shows (update, or a creation's existing notes), without
    the references written after its items."""
    found = _PRIOR.search(prompt)
    sections = parse(found.group(1)).sections if found else empty_sections()
    anything = SeqRange(0, 10**18)
    return {
        section: "\n".join(
            cite(line, anything).text for line in sections.get(section, "").split("\n")
        )
        for section in SECTIONS
    }


@dataclass(frozen=True, slots=True)
class Honest:
    """What a model following the prompt answers: section bodies after its ops, each item's
    seqs, and the ops themselves (update arguments)."""

    sections: Mapping[Section, str]
    cited: Mapping[str, Seqs]
    ops: Mapping[str, Any]


def honest_answer(messages: Sequence[Shown], prior: Mapping[Section, str]) -> Honest:
    extraction = extract([_as_message(m) for m in messages], prior, first_seq=1)
    numbers = [m.seq for m in messages]
    cited = {
        key: tuple(sorted({numbers[p - 1] for p in seqs if 0 < p <= len(numbers)}))
        for key, seqs in extraction.cited.items()
    }
    result = merge(prior, extraction.ops)
    return Honest(result.sections, cited, extraction.ops)


def cite_body(body: str, cited: Mapping[str, Seqs]) -> str:
    lines = []
    for line in body.splitlines():
        item = strip_bullet(line)
        seqs = cited.get(source_key(item), ()) if item and not is_heading(line) else ()
        lines.append(with_reference(line, seqs))
    return "\n".join(lines)


def document(sections: Mapping[Section, str]) -> str:
    return render({s: sections.get(s, "") for s in SECTIONS})


def updates(sections: Mapping[Section, str], prior: Mapping[Section, str]) -> dict[str, Any]:
    """Update arguments that turn the prior into ``sections``: UPDATE what changed."""
    ops: dict[str, Any] = {}
    for section in SECTIONS:
        body = sections.get(section, "")
        if body.strip() == prior.get(section, "").strip():
            ops[section.value] = {"op": "KEEP"}
        else:
            ops[section.value] = {"op": "UPDATE", "content": body}
    return {"sections": ops}


def protected_targets(sections: Mapping[Section, str]) -> list[Target]:
    """What the guards must keep of a working memory: constraints, paths, error lines, open
    items, and the dates of Key Facts."""
    found: list[Target] = []
    for item in split_items(sections.get(Section.TASK_AND_GOALS, "")):
        if is_constraint(item) and not strip_markers(item).startswith("Goal:"):
            found.append(Target(Section.TASK_AND_GOALS, strip_markers(item)))
    for path in dict.fromkeys(find_paths(sections.get(Section.FILES, ""))):
        found.append(Target(Section.FILES, path))
    for item in split_items(sections.get(Section.ERRORS, "")):
        found.append(Target(Section.ERRORS, strip_markers(item)))
    for item in split_items(sections.get(Section.OPEN_ISSUES, "")):
        text = item.lower()
        if not text.startswith(("[resolved]", "[done]", "[silently dropped")):
            found.append(Target(Section.OPEN_ISSUES, strip_markers(item)))
    for date in dict.fromkeys(ISO_DATE.findall(sections.get(Section.KEY_FACTS, ""))):
        found.append(Target(Section.KEY_FACTS, date))
    return found


ISO_DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)")
_NEGATIVE_WORD = re.compile(
    r"\b(?:never|don['’]t|do not|must not|should not|no longer|avoid)\b", re.IGNORECASE
)
_POSITIVE_WORD = re.compile(r"\b(must|should|always|only)\b", re.IGNORECASE)


def inverted(text: str) -> str | None:
    """The constraint said the other way round, or None when it cannot be turned."""
    if _NEGATIVE_WORD.search(text):
        turned = _NEGATIVE_WORD.sub("always", text, count=1)
    elif match := _POSITIVE_WORD.search(text):
        word = match.group(1).lower()
        replacement = {"always": "never", "only": "never"}.get(word, f"{word} not")
        turned = text[: match.start()] + replacement + text[match.end() :]
    else:
        turned = f"Never {text[0].lower()}{text[1:]}"
    return turned if polarity(turned) * polarity(text) == -1 else None


def mutated_path(path: str) -> str:
    """A path one letter off (``models.py`` → ``model.py``)."""
    head, dot, extension = path.rpartition(".")
    if not dot or "/" in extension:
        return f"{path}s"
    return f"{head[:-1]}.{extension}" if head.endswith("s") else f"{head}s.{extension}"


def mutated_date(date: str) -> str:
    """A date a few days off (``2024-07-01`` → ``2024-07-10``)."""
    day = date[-2:]
    swapped = day[::-1] if day[0] != day[1] and int(day[::-1]) <= 28 else f"{int(day) % 28 + 1:02d}"
    return f"{date[:-2]}{swapped}"
