"""The merge: one model proposal plus the prior working memory in, seven bodies and decisions out.

Owns DESIGN 3.4: resolve each section's op, run its guard when the prior body is non-empty,
apply, and record one decision per section. Pure (no I/O, clock or randomness) and total: it
never raises on any input, and never loses prior content in a guarded section.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from app.wm.guards import GUARDS, SENTINEL, GuardContext, Verdict, accept, without_sentinel
from app.wm.items import append_items, fresh_items, split_items
from app.wm.ops import KEEP, OpKind, SectionOp, append, update
from app.wm.provenance import (
    Provenance,
    SectionSources,
    attribute,
    mark_tool_output,
    read_references,
    source_key,
)
from app.wm.reasons import (
    DETAIL_CONFLICTING,
    DETAIL_CONTRADICTS,
    DETAIL_OUTSIDE_RANGE,
    DETAIL_PROBLEM,
    DETAIL_SCHEMA_VIOLATION,
    DETAIL_SENTINEL_REMOVED,
    DETAIL_SOURCE_RESTORED,
    DETAIL_SUPERSEDED_REASON,
    DETAIL_TOOL_SOURCED,
    DETAIL_UNSOURCED,
    Guard,
    Reason,
)
from app.wm.references import Seqs
from app.wm.schema import ResolvedOp, resolve
from app.wm.sections import SECTIONS, ParsedDocument, Section, canonical_body, render
from app.wm.source import Shadow, restore_from_source, restore_trusted, shadow_sources
from app.wm.thresholds import DEFAULT_CONFIG, GuardConfig
from app.wm.tokens import TokenCounter, count_tokens
from app.wm.trust import TRUST_REASONS, mark_unsourced


@dataclass(frozen=True, slots=True)
class Decision:
    """What happened to one section: asked, applied, which guard, why, and the numbers.

    ``requested`` is None when the section's op was missing or unusable. ``guard`` names the
    section's guard when one of its rules was evaluated (a non-empty prior, or a Session Title
    rule).
    """

    section: Section
    requested: OpKind | None
    applied: OpKind
    guard: Guard | None
    reason: Reason
    details: Mapping[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "section": self.section.value,
            "requested": None if self.requested is None else self.requested.value,
            "applied": self.applied.value,
            "guard": None if self.guard is None else self.guard.value,
            "reason": self.reason.value,
            "details": dict(self.details),
        }


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The next working memory: seven bodies in order, its Markdown, and a decision per section.

    Token counts are computed on first use (with the merge's counter) and kept: storing a result
    needs them, a caller that only renders does not. ``sources`` holds every item's sources
    when the merge was given provenance (empty otherwise).
    """

    sections: Mapping[Section, str]
    decisions: tuple[Decision, ...]
    markdown: str
    item_counts: Mapping[Section, int]
    counter: TokenCounter = field(repr=False, compare=False)
    sources: Mapping[Section, SectionSources] = field(default_factory=dict)
    _token_counts: dict[Section, int] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def decision(self, section: Section) -> Decision:
        return self.decisions[SECTIONS.index(section)]

    @property
    def token_counts(self) -> Mapping[Section, int]:
        if not self._token_counts:
            for section, body in self.sections.items():
                self._token_counts[section] = self.counter(body) if body else 0
        return self._token_counts

    @property
    def total_tokens(self) -> int:
        return sum(self.token_counts.values())

    def to_dict(self) -> dict[str, object]:
        return {
            "markdown": self.markdown,
            "sections": {section.value: body for section, body in self.sections.items()},
            "decisions": [decision.to_dict() for decision in self.decisions],
            "token_counts": {s.value: count for s, count in self.token_counts.items()},
            "item_counts": {s.value: count for s, count in self.item_counts.items()},
            "sources": {
                s.value: [entry.as_json() for entry in entries]
                for s, entries in self.sources.items()
            },
        }


def merge(
    prior: Mapping[Section, str],
    ops: object,
    *,
    config: GuardConfig = DEFAULT_CONFIG,
    counter: TokenCounter = count_tokens,
    provenance: Provenance | None = None,
    shadow: Shadow | None = None,
) -> MergeResult:
    """Apply one proposal (tool arguments, already parsed) to the prior seven sections.

    Arguments in which no section has a usable op are no proposal at all (DESIGN 3.7): the prior
    is kept and every decision says ``unrecoverable_arguments``, with why in its details.

    With ``provenance``, every item gets its sources: the trailing references of the op's items
    (read and stripped before any guard sees them) or the extractor's, the prior's, and those
    of the prior items an UPDATE folded into it; and a new Task & Goals constraint that no user
    message gave is marked ``[unsourced]`` (``unsourced_constraint``).

    With ``shadow`` (the offline extractor's working memory of the same messages), what the
    shadow keeps of the messages and the merged section lacks is added back
    (``source_restored``): the guards hold against the source, at creation too.
    """
    resolved = resolve(ops)
    if all(entry.op is None for entry in resolved.values()):
        unusable = [
            Decision(
                section,
                None,
                OpKind.KEEP,
                None,
                Reason.UNRECOVERABLE_ARGUMENTS,
                _problem_details(resolved[section]),
            )
            for section in SECTIONS
        ]
        kept = {s: prior.get(s, "").strip() for s in SECTIONS}
        if shadow is not None:
            context = GuardContext(config, counter)
            for index, section in enumerate(SECTIONS):
                kept[section], unusable[index] = _against_source(
                    section, kept[section], unusable[index], shadow, context
                )
        cited_restored = {
            section: _shadow_citations(
                unusable[index].details.get(DETAIL_SOURCE_RESTORED, []), shadow
            )
            for index, section in enumerate(SECTIONS)
            if shadow is not None
        }
        return result_of(kept, unusable, counter, provenance, cited_restored, prior, shadow)
    context = GuardContext(config, counter)
    bodies: dict[Section, str] = {}
    decisions: list[Decision] = []
    cited: dict[Section, Mapping[str, Seqs]] = {}
    for section in SECTIONS:
        before = prior.get(section, "").strip()
        entry = resolved[section]
        outside: Seqs = ()
        if provenance is not None and provenance.cited is not None:
            cited[section] = provenance.cited
        elif provenance is not None and entry.op is not None:
            read = read_references(entry.op, provenance.allowed)
            entry = replace(entry, op=read.op)
            cited[section], outside = read.cited, read.outside
        body, decision = _merge_section(section, before, entry, context)
        if shadow is not None:
            body, decision = _against_source(section, body, decision, shadow, context)
            if provenance is not None and provenance.cited is None:
                restored = decision.details.get(DETAIL_SOURCE_RESTORED, [])
                cited[section] = {
                    **cited.get(section, {}),
                    **_shadow_citations(restored, shadow),
                }
        if outside:
            decision = replace(
                decision, details={**decision.details, DETAIL_OUTSIDE_RANGE: list(outside[:50])}
            )
        bodies[section] = body
        decisions.append(decision)
    return result_of(bodies, decisions, counter, provenance, cited, prior, shadow, context)


def _against_source(
    section: Section, body: str, decision: Decision, shadow: Shadow, context: GuardContext
) -> tuple[str, Decision]:
    """The section after the source guard: the shadow's protected items it lacks appended,
    and the decision says so (the reason the section's own guard gave stays in the details)."""
    restored = restore_from_source(section, body, shadow, context)
    if not restored:
        return body, decision
    details = {**decision.details, DETAIL_SOURCE_RESTORED: restored}
    if decision.reason is not Reason.ACCEPTED:
        details[DETAIL_SUPERSEDED_REASON] = decision.reason.value
    applied = OpKind.APPEND if decision.applied is OpKind.KEEP else decision.applied
    return append_items(body, restored), replace(
        decision,
        applied=applied,
        guard=decision.guard or Guard.SOURCE_RETENTION,
        reason=Reason.SOURCE_RESTORED,
        details=details,
    )


def _shadow_citations(restored: object, shadow: Shadow) -> dict[str, Seqs]:
    found: dict[str, Seqs] = {}
    for item in restored if isinstance(restored, list) else []:
        key = source_key(str(item))
        if key in shadow.cited:
            found[key] = shadow.cited[key]
    return found


def keep_all(
    prior: Mapping[Section, str],
    reason: Reason = Reason.UNRECOVERABLE_ARGUMENTS,
    *,
    counter: TokenCounter = count_tokens,
) -> MergeResult:
    """The prior unchanged, every section KEEP for ``reason`` (no usable proposal at all)."""
    bodies = {section: prior.get(section, "").strip() for section in SECTIONS}
    decisions = [Decision(section, None, OpKind.KEEP, None, reason) for section in SECTIONS]
    return result_of(bodies, decisions, counter)


def result_of(
    bodies: Mapping[Section, str],
    decisions: list[Decision],
    counter: TokenCounter,
    provenance: Provenance | None = None,
    cited: Mapping[Section, Mapping[str, Seqs]] | None = None,
    prior: Mapping[Section, str] | None = None,
    shadow: Shadow | None = None,
    context: GuardContext | None = None,
) -> MergeResult:
    ordered = {section: canonical_body(bodies[section]) for section in SECTIONS}
    sources: dict[Section, SectionSources] = {}
    if provenance is not None:
        for section in SECTIONS:
            sources[section] = attribute(
                ordered[section],
                (cited or {}).get(section, {}),
                provenance.prior.get(section, ()),
                provenance.roles,
                reuse=provenance.reuse,
            )
        if provenance.cited is None:
            facts = Section.KEY_FACTS
            ordered[facts], sources[facts] = mark_tool_output(ordered[facts], sources[facts])
        task = Section.TASK_AND_GOALS
        checked = mark_unsourced(
            ordered[task],
            sources[task],
            (prior or {}).get(task, "").strip(),
            provenance.prior.get(task, ()),
            provenance.evidence,
            reuse=provenance.reuse,
            upto=provenance.allowed.last,
        )
        ordered[task], sources[task] = checked.body, checked.sources
        index = SECTIONS.index(task)
        if checked.marked:
            decisions[index] = _untrusted(decisions[index], checked.marked)
        if checked.marked and shadow is not None:
            # A constraint the trust rules marked no longer keeps the user's: the shadow's
            # comes back beside it.
            again = restore_trusted(
                ordered[task], shadow, context or GuardContext(DEFAULT_CONFIG, counter)
            )
            if again:
                ordered[task] = append_items(ordered[task], again)
                sources[task] = (*sources[task], *shadow_sources(again, shadow, provenance))
                decision = decisions[index]
                restored = decision.details.get(DETAIL_SOURCE_RESTORED, [])
                listed = [*restored, *again] if isinstance(restored, list) else again
                decisions[index] = replace(
                    decision, details={**decision.details, DETAIL_SOURCE_RESTORED: listed}
                )
    return MergeResult(
        sections=ordered,
        decisions=tuple(decisions),
        markdown=render(ordered),
        item_counts={s: len(split_items(body)) for s, body in ordered.items()},
        counter=counter,
        sources=sources,
    )


_TRUST_DETAILS: Final = {
    Reason.TOOL_SOURCED_INSTRUCTION: DETAIL_TOOL_SOURCED,
    Reason.CONFLICTING_CONSTRAINT: DETAIL_CONFLICTING,
    Reason.CONTRADICTS_SOURCE: DETAIL_CONTRADICTS,
    Reason.UNSOURCED_CONSTRAINT: DETAIL_UNSOURCED,
}


def _untrusted(decision: Decision, marked: Mapping[Reason, list[str]]) -> Decision:
    """The Task & Goals decision once the trust rules marked items: the first of their reasons
    (``TRUST_REASONS`` order), every rule's items in its detail (guard C's or the source
    guard's restoration, if any, stays in the details)."""
    reason = next(reason for reason in TRUST_REASONS if reason in marked)
    details = {**decision.details}
    for found, items in marked.items():
        details[_TRUST_DETAILS[found]] = items
    if decision.reason not in (Reason.ACCEPTED, *TRUST_REASONS):
        details.setdefault(DETAIL_SUPERSEDED_REASON, decision.reason.value)
    return replace(decision, guard=Guard.CONSTRAINT_RETENTION, reason=reason, details=details)


def creation_ops(document: ParsedDocument) -> dict[str, object]:
    """Tool arguments for a created document: UPDATE every section it filled, KEEP the others.

    A section the document leaves empty or out is KEEP rather than an UPDATE to nothing, so a
    creation call that stands in for an update (DESIGN 4.3) cannot blank a prior section.
    """
    sections: dict[str, object] = {}
    for section in SECTIONS:
        body = document.sections.get(section, "")
        if body:
            sections[section.value] = {"op": OpKind.UPDATE.value, "content": body}
        else:
            sections[section.value] = {"op": OpKind.KEEP.value}
    return {"sections": sections}


_TITLE_RULES: Final = Guard.TITLE_STABILITY


def _merge_section(
    section: Section, before: str, resolved: ResolvedOp, context: GuardContext
) -> tuple[str, Decision]:
    details = _problem_details(resolved)
    if resolved.op is None:
        reason = resolved.problem or Reason.INVALID_OP
        return before, Decision(section, None, OpKind.KEEP, None, reason, details)
    requested = resolved.op.kind
    op = resolved.op
    if section is Section.KEY_FACTS:
        # Only the guard may write the sentinel; a copy in the model's proposal is not a fact.
        cleaned = _without_sentinel_op(op)
        if cleaned != op:
            details[DETAIL_SENTINEL_REMOVED] = True
        op = cleaned
    if op.kind is OpKind.APPEND:
        fresh = fresh_items(before, op.items)
        if not fresh:
            return before, Decision(
                section, requested, OpKind.KEEP, None, Reason.NOTHING_NEW, details
            )
        op = append(fresh)
    guard: Guard | None = None
    verdict: Verdict = accept(op)
    if section is Section.SESSION_TITLE and op.kind is OpKind.UPDATE and not op.content.strip():
        guard, verdict = _TITLE_RULES, Verdict(KEEP, Reason.TITLE_EMPTY)
    elif section is Section.SESSION_TITLE and op.kind is OpKind.APPEND and not before:
        guard, verdict = _TITLE_RULES, Verdict(update(op.items[0]), Reason.TITLE_SINGLE_LINE)
    elif before and section in GUARDS:
        guard, function = GUARDS[section]
        verdict = function(before, op, context)
    details.update(verdict.details)
    body = _apply(before, verdict.op)
    return body, Decision(section, requested, verdict.op.kind, guard, verdict.reason, details)


def _problem_details(resolved: ResolvedOp) -> dict[str, object]:
    """The schema violation of a section's op and, when it is unusable, why."""
    details: dict[str, object] = {}
    if resolved.schema_violation is not None:
        details[DETAIL_SCHEMA_VIOLATION] = resolved.schema_violation
    if resolved.detail is not None:
        details[DETAIL_PROBLEM] = resolved.detail
    return details


def _without_sentinel_op(op: SectionOp) -> SectionOp:
    if op.kind is OpKind.UPDATE:
        return update(without_sentinel(op.content)) if SENTINEL in op.content else op
    if op.kind is OpKind.APPEND:
        return append([item for item in op.items if SENTINEL not in item])
    return op


def _apply(before: str, op: SectionOp) -> str:
    if op.kind is OpKind.UPDATE:
        return op.content.strip()
    if op.kind is OpKind.APPEND:
        return append_items(before, op.items)
    return before
