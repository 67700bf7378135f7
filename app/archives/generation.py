"""Producing the next working memory for an archive: the model path and its fallback chain.

Owns DESIGN 4.3: update call → (no tool call or unrecoverable arguments) creation call →
(model unavailable or creation unusable) the offline extractor; every path ends in the same pure
merge, and the generator that produced the result is recorded with why. Holds no transaction:
callers load the input before and write the result after (nothing here touches the database).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from app.archives.plan import (
    Known,
    Plan,
    Progress,
    Resume,
    consecutive_runs,
    offline_batches,
)
from app.archives.working_memory import WorkingMemory
from app.llm.ports import ChatModel, ModelError, Usage
from app.wm.authority import authority_of, roles_and_evidence
from app.wm.extractor import extract
from app.wm.merge import MergeResult, creation_ops, merge
from app.wm.prompts import PROMPT_VERSION, batch_messages, create_prompt, update_prompt
from app.wm.provenance import (
    Provenance,
    cited_markdown,
    source_key,
)
from app.wm.recovery import RecoveryPath, recover_arguments, recover_document
from app.wm.references import SeqRange
from app.wm.reuse import Reuse
from app.wm.schema import CREATE_TOOL, UPDATE_TOOL
from app.wm.sections import Section, empty_sections, parse, render
from app.wm.source import Shadow, refused_items
from app.wm.thresholds import DEFAULT_CONFIG, GuardConfig, size_warnings
from app.wm.tokens import count_tokens

logger = logging.getLogger(__name__)

GeneratorName = Literal[
    "llm_update",
    "llm_recovered",
    "llm_create",
    "llm_create_fallback",
    "offline",
    "offline_fallback",
]

_PROMPT_OVERHEAD_TOKENS = 3_000
"""Rules, tool schema and framing of a prompt, kept out of the message budget."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Generated:
    """The next working memory and how it was produced (stored with the archive)."""

    result: MergeResult
    generator: GeneratorName
    note: str | None = None
    model: str | None = None
    prompt_version: str | None = None
    usage: Usage = field(default_factory=Usage)
    upgraded_from_legacy: bool = False
    batches: int = 1


def legacy_sections(legacy_text: str) -> dict[Section, str]:
    """Sections from a legacy overview: its own headers if it has any, else its lines as facts.

    Free text goes to Key Facts & Decisions (the cumulative section) so the offline path keeps
    every line of it; the model path instead rewrites it with the creation call.
    """
    document = parse(legacy_text)
    if document.found:
        return dict(document.sections)
    sections = empty_sections()
    lines = [line.strip() for line in legacy_text.splitlines() if line.strip()]
    sections[Section.KEY_FACTS] = "\n".join(
        line if line.startswith(("-", "*", "+")) else f"- {line}" for line in lines
    )
    return sections


@dataclass(frozen=True, slots=True)
class Batch:
    """One model call's messages, the seq of the first, and the pins shown beside them."""

    messages: Sequence[Mapping[str, object]]
    first_seq: int
    pins: tuple[str, ...] = ()


class WorkingMemoryGenerator:
    def __init__(
        self,
        chat: ChatModel | None,
        *,
        fallback: Literal["offline", "none"] = "offline",
        max_input_tokens: int = 24_000,
        config: GuardConfig = DEFAULT_CONFIG,
    ) -> None:
        self.chat = chat
        self.fallback = fallback
        self.max_input_tokens = max_input_tokens
        self.config = config

    def plan(
        self,
        prior: WorkingMemory,
        messages: Sequence[Mapping[str, object]],
        *,
        seqs: Sequence[int] | None = None,
        pinned_seqs: frozenset[int] = frozenset(),
        known: Known | None = None,
    ) -> Plan:
        """The archive's messages cut into batches within the input budget the prior leaves.

        ``seqs`` numbers the messages (default 1, 2, …): every item gets the seqs it came from,
        and a reference may name any message up to the batch's last. A batch never spans a gap
        in the numbering (a retracted message), so each batch is numbered consecutively.
        ``pinned_seqs`` are the messages the agent session's pins name, whose items get the
        ``pin`` authority. ``known`` (offline only) is what a plan made ahead found of the first
        batches: used when the budget and the first messages' seqs are still its own (messages
        never change in place), so those messages are not read again; the plan is the same.
        """
        numbers = list(range(1, len(messages) + 1)) if seqs is None else list(seqs)
        if len(numbers) != len(messages):
            raise ValueError(f"{len(numbers)} seqs for {len(messages)} messages")
        prior_tokens = count_tokens(render(prior.sections)) + count_tokens(prior.legacy_text or "")
        budget = max(2_000, self.max_input_tokens - _PROMPT_OVERHEAD_TOKENS - prior_tokens)
        batches: list[tuple[Sequence[Mapping[str, object]], int]] = []
        evidence: dict[int, str] = {}
        roles: dict[int, tuple[str, ...]] = {}
        done = 0
        if known is not None and self.chat is None and known.budget == budget:
            seen = known.seqs
            if numbers[: len(seen)] == seen:
                for first_seq, length in known.cut:
                    batches.append((messages[done : done + length], first_seq))
                    done += length
                evidence.update(known.evidence)
                for seq, found in zip(seen, known.roles, strict=True):
                    roles[seq] = authority_of({*found, "pin"} if seq in pinned_seqs else found)
        for start, end in consecutive_runs(numbers[done:]):
            run, first_seq = messages[done + start : done + end], numbers[done + start]
            # One read of the run for both: who each message is, and the constraints quoted.
            run_roles, run_evidence = roles_and_evidence(run, first_seq, pinned_seqs)
            roles.update(run_roles)
            evidence.update(run_evidence)
            if self.chat is None:
                cut = offline_batches(run, budget)
            else:
                cut = batch_messages(run, budget=budget)
            for batch in cut:
                batches.append((batch, first_seq))
                first_seq += len(batch)
        return Plan(budget, tuple(batches) or (([], 1),), evidence, roles)

    async def generate(
        self,
        prior: WorkingMemory,
        messages: Sequence[Mapping[str, object]],
        *,
        seqs: Sequence[int] | None = None,
        pins: Sequence[str] = (),
        pinned_seqs: frozenset[int] = frozenset(),
        resume: Resume | None = None,
    ) -> Generated:
        """Merge the archive's messages into the prior, batch by batch (each batch's WM is the
        next batch's prior), so the input of one call stays within ``max_input_tokens``
        (``plan`` says how they are cut). ``pins`` are the agent session's pinned facts, given
        to the model as facts not to contradict.

        ``resume`` (offline only) is asked, with the plan, for the progress prepared ahead
        through its first batches; those are not run again (``app.archives.prepared`` says when
        a checkpoint may be resumed from: the result is the same)."""
        known = None if resume is None else resume.known
        plan = self.plan(prior, messages, seqs=seqs, pinned_seqs=pinned_seqs, known=known)
        start = None if resume is None or self.chat is not None else resume(plan)
        steps, usage, _ = await self._run(prior, plan, pins, start, len(plan.batches))
        last = steps[-1]
        generators = {step.generator for step in steps}
        notes = [step.note for step in steps if step.note]
        return Generated(
            result=last.result,
            generator=last.generator if len(generators) == 1 else _worst(generators),
            note="; ".join(dict.fromkeys(notes)) or None,
            model=next((step.model for step in steps if step.model), None),
            prompt_version=next((s.prompt_version for s in steps if s.prompt_version), None),
            usage=usage,
            upgraded_from_legacy=prior.legacy_text is not None,
            batches=len(plan.batches),
        )

    async def advance(
        self, prior: WorkingMemory, plan: Plan, start: Progress | None, upto: int
    ) -> Progress:
        """The working memory after the plan's first ``upto`` batches (offline, from ``start``
        when given): what a later generation of a longer archive resumes from."""
        if self.chat is not None:
            raise ValueError("only the offline generation is prepared ahead")
        if start is not None and start.batches >= upto:
            return start
        _, _, progress = await self._run(prior, plan, (), start, upto)
        return progress

    async def _run(
        self,
        prior: WorkingMemory,
        plan: Plan,
        pins: Sequence[str],
        start: Progress | None,
        upto: int,
    ) -> tuple[list[Generated], Usage, Progress]:
        usage = Usage()
        steps: list[Generated] = []
        current = prior
        if start is not None:
            current = replace(
                prior, sections=start.sections, sources=start.sources, legacy_text=None
            )
        # The archive's messages are the same for every batch: what one batch found of them
        # (roles of seqs, quoted constraints) the next looks up.
        reuse = Reuse(plan.evidence, plan.roles)
        done = 0 if start is None else start.batches
        for part, first_seq in plan.batches[done:upto]:
            step = await self._step(
                current,
                Batch(part, first_seq, tuple(pins)),
                Provenance(
                    SeqRange(1, first_seq + len(part) - 1),
                    prior=current.sources,
                    evidence=plan.evidence,
                    roles=plan.roles,
                    reuse=reuse,
                ),
            )
            usage = usage + step.usage
            steps.append(step)
            current = replace(
                current,
                sections=step.result.sections,
                sources=step.result.sources,
                legacy_text=None,
            )
        return steps, usage, Progress(upto, current.sections, current.sources)

    async def _step(self, prior: WorkingMemory, batch: Batch, provenance: Provenance) -> Generated:
        if self.chat is None:
            return self._offline(prior, batch, provenance, "offline", None)
        shadow = self._shadow(prior, batch, provenance)
        try:
            if prior.legacy_text is not None or prior.is_empty:
                return await self._create(self.chat, prior, batch, provenance, "llm_create", shadow)
            return await self._update(self.chat, prior, batch, provenance, shadow)
        except ModelError as error:
            if self.fallback == "none":
                raise
            logger.warning("model unavailable, offline fallback", extra={"error": str(error)})
            return self._offline(
                prior, batch, provenance, "offline_fallback", f"model unavailable: {error}"
            )

    def _shadow(self, prior: WorkingMemory, batch: Batch, provenance: Provenance) -> Shadow:
        """The shadow prior: what the offline extractor makes of the same messages from the same
        prior, which a model's proposal is checked against (``app.wm.source``)."""
        result = self._offline(prior, batch, provenance, "offline", None).result
        cited = {
            source_key(entry.item): entry.seqs
            for entries in result.sources.values()
            for entry in entries
            if entry.seqs
        }
        return Shadow(
            result.sections, cited, refused_items(prior.sections.get(Section.TASK_AND_GOALS, ""))
        )

    def _offline(
        self,
        prior: WorkingMemory,
        batch: Batch,
        provenance: Provenance,
        generator: GeneratorName,
        note: str | None,
    ) -> Generated:
        sections = prior.sections
        if prior.legacy_text is not None:
            sections = merge(
                empty_sections(),
                creation_ops(parse(render(legacy_sections(prior.legacy_text)))),
                config=self.config,
            ).sections
        extraction = extract(batch.messages, sections, first_seq=batch.first_seq)
        return Generated(
            result=merge(
                sections,
                extraction.ops,
                config=self.config,
                provenance=replace(provenance, cited=extraction.cited),
            ),
            generator=generator,
            note=note,
        )

    async def _update(
        self,
        chat: ChatModel,
        prior: WorkingMemory,
        batch: Batch,
        provenance: Provenance,
        shadow: Shadow,
    ) -> Generated:
        prompt = update_prompt(
            render(cited_markdown(prior.sections, prior.sources)),
            batch.messages,
            size_warnings=size_warnings(prior.sections, count_tokens, self.config),
            first_seq=batch.first_seq,
            pins=batch.pins,
        )
        outcome = await chat.call_tool(
            system=prompt[0]["content"], user=prompt[1]["content"], tool=UPDATE_TOOL["function"]
        )
        if outcome.arguments is not None:
            recovery = recover_arguments(outcome.arguments)
            if recovery.path is RecoveryPath.PARSED and not recovery.scanned:
                return Generated(
                    result=merge(
                        prior.sections,
                        _decoded(outcome.arguments),
                        config=self.config,
                        provenance=provenance,
                        shadow=shadow,
                    ),
                    generator="llm_update",
                    model=outcome.model,
                    prompt_version=PROMPT_VERSION,
                    usage=outcome.usage,
                )
            if recovery.arguments is not None:
                return Generated(
                    result=merge(
                        prior.sections,
                        recovery.arguments,
                        config=self.config,
                        provenance=provenance,
                        shadow=shadow,
                    ),
                    generator="llm_recovered",
                    note=f"arguments {recovery.path.value}",
                    model=outcome.model,
                    prompt_version=PROMPT_VERSION,
                    usage=outcome.usage,
                )
            reason = "unrecoverable tool arguments"
        else:
            reason = "no tool call"
        created = await self._create(chat, prior, batch, provenance, "llm_create_fallback", shadow)
        return replace(
            created,
            note=f"{reason}; {created.note}" if created.note else reason,
            usage=outcome.usage + created.usage,
        )

    async def _create(
        self,
        chat: ChatModel,
        prior: WorkingMemory,
        batch: Batch,
        provenance: Provenance,
        generator: GeneratorName,
        shadow: Shadow,
    ) -> Generated:
        if prior.legacy_text is not None:
            context = prior.legacy_text
        else:
            context = render(cited_markdown(prior.sections, prior.sources))
        if prior.is_empty:
            context = ""
        prompt = create_prompt(
            batch.messages, context=context, first_seq=batch.first_seq, pins=batch.pins
        )
        outcome = await chat.call_tool(
            system=prompt[0]["content"], user=prompt[1]["content"], tool=CREATE_TOOL["function"]
        )
        markdown = _created_markdown(outcome.arguments, outcome.text)
        document = parse(markdown) if markdown else None
        if document is None or not document.found:
            offline = self._offline(
                prior, batch, provenance, "offline_fallback", "creation output unusable"
            )
            return replace(
                offline, model=outcome.model, prompt_version=PROMPT_VERSION, usage=outcome.usage
            )
        base = prior.sections if prior.legacy_text is None else empty_sections()
        return Generated(
            result=merge(
                base,
                creation_ops(document),
                config=self.config,
                provenance=provenance,
                shadow=shadow,
            ),
            generator=generator,
            note="upgraded from legacy overview" if prior.legacy_text is not None else None,
            model=outcome.model,
            prompt_version=PROMPT_VERSION,
            usage=outcome.usage,
        )


_SEVERITY: tuple[GeneratorName, ...] = (
    "offline_fallback",
    "llm_create_fallback",
    "llm_recovered",
    "llm_create",
    "llm_update",
    "offline",
)


def _worst(generators: set[GeneratorName]) -> GeneratorName:
    return next(name for name in _SEVERITY if name in generators)


def _decoded(arguments: str) -> object:
    """Arguments that parsed as they are; serialised twice, they are decoded twice."""
    value = json.loads(arguments)
    return json.loads(value) if isinstance(value, str) else value


def _created_markdown(arguments: str | None, text: str | None) -> str | None:
    """The document of a creation call: its tool arguments, recovered like update arguments
    are (parse, then repair), or else the plain text the model answered with."""
    for answer in (arguments, text):
        document = recover_document(answer) if answer else None
        if document is not None:
            return document
    return None
