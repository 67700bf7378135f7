"""The offline extractor: deterministic update arguments from archived messages and the prior WM.

Owns the rules of DESIGN 4.1: what each section takes from the messages, how it stays within
budget (consolidating in ways the guards accept), when an open question counts as answered.
Never applies ops: its output goes through exactly the same merge and guards as a model's.
One module per section rule; ``reading`` holds what they share about a batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.wm.extractor.config import DEFAULT_EXTRACTOR_CONFIG, ExtractorConfig
from app.wm.extractor.errors import errors_op
from app.wm.extractor.files import files_op
from app.wm.extractor.issues import issues_op
from app.wm.extractor.key_facts import DIGEST_PREFIX, key_facts_op
from app.wm.extractor.reading import Reading, clip, sentences
from app.wm.extractor.task import task_op
from app.wm.extractor.title_state import carried_day, state_op, title_op
from app.wm.messages import read_messages
from app.wm.references import Seqs
from app.wm.sections import SECTIONS, Section
from app.wm.tokens import TokenCounter, count_tokens

__all__ = [
    "DEFAULT_EXTRACTOR_CONFIG",
    "DIGEST_PREFIX",
    "Extraction",
    "ExtractorConfig",
    "clip",
    "extract",
    "extract_ops",
    "sentences",
]


@dataclass(frozen=True, slots=True)
class Extraction:
    """The extractor's ``update_working_memory`` arguments and the seqs each item was taken
    from, by ``source_key`` (what a model writes as trailing references)."""

    ops: dict[str, object]
    cited: Mapping[str, Seqs]


def extract(
    messages: Sequence[Mapping[str, object]],
    prior: Mapping[Section, str] | None = None,
    *,
    counter: TokenCounter = count_tokens,
    config: ExtractorConfig = DEFAULT_EXTRACTOR_CONFIG,
    first_seq: int = 1,
) -> Extraction:
    """The ops for these messages (numbered from ``first_seq``), with their items' sources."""
    bodies = {section: (prior or {}).get(section, "").strip() for section in SECTIONS}
    views = [view for view in read_messages(messages) if view.text.strip() or view.tool_calls]
    reading = Reading(views, day=carried_day(bodies[Section.CURRENT_STATE]), first_seq=first_seq)
    sections = {
        Section.SESSION_TITLE: title_op(reading, bodies[Section.SESSION_TITLE], config),
        Section.CURRENT_STATE: state_op(reading, config),
        Section.TASK_AND_GOALS: task_op(reading, bodies[Section.TASK_AND_GOALS], config),
        Section.KEY_FACTS: key_facts_op(reading, bodies[Section.KEY_FACTS], counter, config),
        Section.FILES: files_op(reading, bodies[Section.FILES], config),
        Section.ERRORS: errors_op(reading, bodies[Section.ERRORS], config),
        Section.OPEN_ISSUES: issues_op(reading, bodies[Section.OPEN_ISSUES], config),
    }
    ops: dict[str, object] = {
        "sections": {section.value: sections[section] for section in SECTIONS}
    }
    return Extraction(ops, reading.citations())


def extract_ops(
    messages: Sequence[Mapping[str, object]],
    prior: Mapping[Section, str] | None = None,
    *,
    counter: TokenCounter = count_tokens,
    config: ExtractorConfig = DEFAULT_EXTRACTOR_CONFIG,
) -> dict[str, object]:
    """``update_working_memory`` arguments for these messages, valid under the tool schema."""
    return extract(messages, prior, counter=counter, config=config).ops
