"""The context ledger's values, pure: seq ranges, hashes, and what one recorded context names.

Owns the one canonical form a context's ``messages`` are hashed in (UTF-8 JSON, keys sorted, no
spaces) and the compact form of a run of seqs (``[[start, end], ...]``). Never reads or stores
anything and never decides what a context holds.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

SOURCES: Final = ("context", "compact", "openviking")
"""Which request assembled a recorded context: the v1 context, compact, or the OpenViking one."""


def records_context(asked: bool | None, *, session_default: bool) -> bool:
    """Whether a context is recorded: as the request says (``record=true`` or ``false``), else
    as its agent session's ``record_contexts`` says (false unless set)."""
    return session_default if asked is None else asked


def seq_ranges(seqs: Iterable[int]) -> list[list[int]]:
    """Ascending seqs as inclusive ``[start, end]`` runs: ``1, 2, 3, 7`` is ``[[1, 3], [7, 7]]``."""
    ranges: list[list[int]] = []
    for seq in seqs:
        if ranges and ranges[-1][1] + 1 == seq:
            ranges[-1][1] = seq
        else:
            ranges.append([seq, seq])
    return ranges


def expand_ranges(ranges: Iterable[Sequence[int]]) -> list[int]:
    """The seqs of ``[start, end]`` runs, in order."""
    return [seq for start, end in ranges for seq in range(start, end + 1)]


def messages_sha256(messages: Sequence[Mapping[str, Any]]) -> str:
    """The sha256 of chat messages in their canonical JSON: what the ledger compares."""
    canonical = json.dumps(messages, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def text_sha256(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class SectionRef:
    """One section version the summary was made from: ``section`` ``None`` for a legacy
    free-text working memory."""

    section: str | None
    archive_seq: int
    content_sha256: str


@dataclass(frozen=True, slots=True)
class MemoryRef:
    """A recalled memory as it was sent: memories are restated in place, so the ledger keeps
    the hash of the content and the time it was last stated, and a rebuild finds that content
    in the memory's history."""

    memory_id: uuid.UUID
    score: float
    content_sha256: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class HintSpec:
    """How ``system_prompt_addition`` was written: which form, with or without the note on cuts,
    and the archive ranges it names (newest first)."""

    form: str
    """``with_summary``, ``without_summary`` or ``omitted``."""
    cut_note: bool
    fill: bool
    archives: tuple[tuple[int, int, int], ...]
    """``(archive_seq, start_seq, end_seq)`` of the archives named, newest first."""

    def as_json(self) -> dict[str, Any]:
        return {
            "form": self.form,
            "cut_note": self.cut_note,
            "fill": self.fill,
            "archives": [list(archive) for archive in self.archives],
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> HintSpec:
        return cls(
            form=str(value.get("form", "omitted")),
            cut_note=bool(value.get("cut_note", False)),
            fill=bool(value.get("fill", False)),
            archives=tuple((int(a), int(s), int(e)) for a, s, e in value.get("archives", ())),
        )


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """Everything one recorded context names: ids, seqs, options, token counts, hashes."""

    agent_session_id: uuid.UUID
    source: str
    summary_archive_seq: int | None
    summary_covered_end_seq: int | None
    summary_sections: tuple[SectionRef, ...]
    summary_layer: int
    pin_ids: tuple[uuid.UUID, ...]
    pins_sent: int
    memories: tuple[MemoryRef, ...]
    tail_seqs: tuple[int, ...]
    filled_seqs: tuple[int, ...]
    cleared_seqs: tuple[int, ...]
    retracted_seqs: tuple[int, ...]
    redacted_seqs: tuple[int, ...]
    options: Mapping[str, Any]
    tokens: Mapping[str, int | bool]
    hint: HintSpec
    parts_sha256: Mapping[str, str | None]
    message_count: int
    messages_sha256: str


@dataclass(frozen=True, slots=True)
class Unavailable:
    """Something a recorded context used that is no longer as it was: ``part`` is ``summary``
    (``id`` the section), ``memory``, ``pin`` or ``message`` (``id`` the seq); ``reason`` is
    ``erased`` (gone), ``redacted`` (its content replaced) or ``changed``."""

    part: str
    id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Rendering:
    """A recorded context rebuilt: its messages and hint, their hashes compared with the
    recorded ones, and what could not be used as it was."""

    messages: list[dict[str, Any]]
    system_prompt_addition: str
    messages_sha256: str
    matches: bool
    system_prompt_addition_matches: bool
    unavailable: tuple[Unavailable, ...]
