"""Archives prepared ahead: how far an idle agent session's next archive can be worked out before
the commit, stored, and when its job may start from there.

While an agent session is idle, the server that took its appends plans its next archive (the
live messages up to the split a commit would make now), runs the offline generation through
every batch but the last, and reads the same messages with the memory rules; a ``Checkpoint`` is
where both stand. The archive's job resumes from it only when everything the stored progress was
made of is unchanged:

- the prior working memory (its archive), and that it is not a legacy overview;
- the input budget, the configuration and the release (``config_key``);
- the batches: the same seqs cut the same way (a retracted message changes them), with the
  archive going on past them (its last batch is always the job's own);
- the pins naming those messages (their items' authority).

Nothing after the prepared batches changes them: a batch is judged on the messages up to its own
last (``app.wm.trust``: a constraint quoting a later message counts from the batch that
covers it).

A stored message changes in place only by redaction, which drops the agent session's checkpoint
in its own transaction. Whatever is refused, the job generates from the start: the result is the
same either way. Pure: ``preparing`` makes and stores checkpoints, the worker reads them.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Set
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Final

from app.archives.generation import WorkingMemoryGenerator
from app.archives.plan import Known, Plan, Progress
from app.archives.prepared_repository import PreparedRow
from app.archives.working_memory import WorkingMemory
from app.memories.extraction import MemoryExtractor
from app.memories.records import Candidate, Category
from app.memories.rules import RuleScan
from app.wm.provenance import SectionSources, sources_from_json
from app.wm.sections import SECTIONS, Section

FORMAT: Final = 1
"""The checkpoint's stored form; a checkpoint of another is never resumed from."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Where an agent session's next archive stands, worked out ahead: the generation's
    ``progress`` through its first batches (messages ``first_seq..end_seq``) from the working
    memory of archive ``prior_archive_seq``, and the memory rules' ``scan`` of the same messages
    (None when the memories are not read ahead)."""

    prior_archive_seq: int
    first_seq: int
    end_seq: int
    budget: int
    fingerprint: str
    progress: Progress
    scan: RuleScan | None = None
    known: Known | None = None
    """What the plan knew of the prepared batches: a later plan of the archive does not read
    their messages again."""

    def state(self) -> dict[str, Any]:
        """The progress and the scan as stored (JSON)."""
        return {
            "format": FORMAT,
            "batches": self.progress.batches,
            "sections": {section.value: self.progress.sections[section] for section in SECTIONS},
            # Pairs, not objects: a JSON object's keys come back in the database's order.
            "sources": [
                [section.value, [entry.as_json() for entry in entries]]
                for section, entries in self.progress.sources.items()
            ],
            "scan": None if self.scan is None else _scan_json(self.scan),
            "known": None if self.known is None else _known_json(self.known),
        }


def config_key(generator: WorkingMemoryGenerator, memories: MemoryExtractor | None) -> str:
    """The configuration a checkpoint is made with and resumed under (part of ``fingerprint``),
    with the release: another release's rules may decide differently."""
    rules = None if memories is None or not memories.reads_ahead else memories.rule_config
    return repr((_release(), generator.max_input_tokens, generator.config, rules))


@functools.cache
def _release() -> str:
    return metadata.version("workmem")


def checkpoint_from(row: PreparedRow | None) -> Checkpoint | None:
    """The checkpoint a stored row holds, if any (``checkpoint_of``)."""
    if row is None:
        return None
    return checkpoint_of(
        prior_archive_seq=row.prior_archive_seq,
        first_seq=row.first_seq,
        end_seq=row.end_seq,
        budget=row.budget,
        fingerprint=row.fingerprint,
        state=row.state,
    )


def checkpoint_of(
    *,
    prior_archive_seq: int,
    first_seq: int,
    end_seq: int,
    budget: int,
    fingerprint: str,
    state: Mapping[str, Any],
) -> Checkpoint | None:
    """A stored checkpoint read back; None when its state is not of this ``FORMAT`` or not
    well formed (never resumed from: the job starts over)."""
    try:
        if state.get("format") != FORMAT:
            return None
        sections = {section: str(state["sections"][section.value]) for section in SECTIONS}
        sources: dict[Section, SectionSources] = {
            Section(name): sources_from_json(entries) for name, entries in state["sources"]
        }
        scan = None if state["scan"] is None else _scan_of(state["scan"])
        known = None if state.get("known") is None else _known_of(state["known"])
        progress = Progress(int(state["batches"]), sections, sources)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return Checkpoint(
        prior_archive_seq, first_seq, end_seq, budget, fingerprint, progress, scan, known
    )


def fingerprint(
    plan: Plan,
    batches: int,
    *,
    prior: WorkingMemory,
    pinned_seqs: Set[int],
    config: str,
) -> str:
    """What the progress through the plan's first ``batches`` batches was made of, in one
    digest: the prior, the budget and configuration, each batch's seqs, and the pins among
    them (a pin gives its message's items the ``pin`` authority)."""
    first = plan.batches[0][1]
    end = plan.end_seq(batches)
    made_of = [
        FORMAT,
        config,
        prior.archive_seq,
        plan.budget,
        [[first_seq, len(part)] for part, first_seq in plan.batches[:batches]],
        sorted(seq for seq in pinned_seqs if first <= seq <= end),
    ]
    return hashlib.sha256(json.dumps(made_of).encode()).hexdigest()


def resume_point(
    checkpoint: Checkpoint | None,
    plan: Plan,
    *,
    prior: WorkingMemory,
    pinned_seqs: Set[int],
    config: str,
    final: bool = True,
) -> Progress | None:
    """The checkpoint's progress when the plan may go on from it, else None.

    ``final``: the plan is the archive's own, whose last batch the job always runs itself
    (a preparation going on from an older checkpoint may be exactly where it stands)."""
    if checkpoint is None or prior.legacy_text is not None:
        return None
    done = checkpoint.progress.batches
    limit = len(plan.batches) - 1 if final else len(plan.batches)
    if not 0 < done <= limit:
        return None
    if (
        checkpoint.prior_archive_seq != prior.archive_seq
        or checkpoint.budget != plan.budget
        or checkpoint.first_seq != plan.batches[0][1]
        or checkpoint.end_seq != plan.end_seq(done)
    ):
        return None
    made_of = fingerprint(plan, done, prior=prior, pinned_seqs=pinned_seqs, config=config)
    return checkpoint.progress if made_of == checkpoint.fingerprint else None


@dataclass(slots=True)
class Resumption:
    """``resume_point`` as generation asks it (``Resume``), remembering the progress it gave."""

    checkpoint: Checkpoint | None
    prior: WorkingMemory
    pinned_seqs: Set[int]
    config: str
    progress: Progress | None = None

    @property
    def known(self) -> Known | None:
        return None if self.checkpoint is None else self.checkpoint.known

    def __call__(self, plan: Plan) -> Progress | None:
        self.progress = resume_point(
            self.checkpoint,
            plan,
            prior=self.prior,
            pinned_seqs=self.pinned_seqs,
            config=self.config,
        )
        return self.progress


def _scan_json(scan: RuleScan) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "category": candidate.category.value,
                "content": candidate.content,
                "confidence": candidate.confidence,
                "source_seqs": list(candidate.source_seqs),
                "slot": candidate.slot,
                "slot_value": candidate.slot_value,
                "rule": candidate.rule,
            }
            for candidate in scan.candidates
        ],
        "skipped": [[reason, count] for reason, count in scan.skipped.items()],
        "error_seen": scan.error_seen,
        "previous_role": scan.previous_role,
    }


def _scan_of(value: Mapping[str, Any]) -> RuleScan:
    candidates = tuple(
        Candidate(
            Category(found["category"]),
            str(found["content"]),
            float(found["confidence"]),
            tuple(int(seq) for seq in found["source_seqs"]),
            found["slot"],
            found["slot_value"],
            str(found["rule"]),
        )
        for found in value["candidates"]
    )
    skipped = {str(reason): int(count) for reason, count in value["skipped"]}
    return RuleScan(candidates, skipped, bool(value["error_seen"]), str(value["previous_role"]))


def _known_json(known: Known) -> dict[str, Any]:
    return {
        "budget": known.budget,
        "cut": [list(batch) for batch in known.cut],
        "evidence": [[seq, text] for seq, text in known.evidence.items()],
        "roles": [list(found) for found in known.roles],
    }


def _known_of(value: Mapping[str, Any]) -> Known:
    cut = tuple((int(first), int(length)) for first, length in value["cut"])
    roles = tuple(tuple(str(role) for role in found) for found in value["roles"])
    if len(roles) != sum(length for _, length in cut):
        raise ValueError("a role for every message of the batches")
    return Known(
        int(value["budget"]),
        cut,
        {int(seq): str(text) for seq, text in value["evidence"]},
        roles,
    )
