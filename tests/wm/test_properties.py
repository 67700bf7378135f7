"""Properties of the pure core, checked on generated inputs (DESIGN 16 "Bad input").

The merge never raises; what the guarded sections exist to keep survives any proposal; an
emergency Key Facts section only grows by its sentinel or shrinks by a consolidation; the same
ops twice add no duplicate; parsing a rendered document gives it back.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.wm.extractor import extract_ops
from app.wm.guards import SENTINEL, is_constraint
from app.wm.items import Marker, markers_of, normalise, snippet, split_items
from app.wm.merge import merge
from app.wm.ops import OpKind
from app.wm.provenance import ItemSource, Provenance, source_key
from app.wm.reasons import Reason
from app.wm.recovery import recover_arguments
from app.wm.references import SeqRange
from app.wm.schema import UPDATE_VALIDATOR, interpret, locate_ops
from app.wm.sections import SECTIONS, Section, canonical_body, parse, render
from tests.support.recovery import VALID
from tests.wm.helpers import path_set, words

# Enough examples to find the edge cases these strategies aim at, few enough to keep the whole
# suite fast on two cores.
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FRAGMENTS = [
    "Never use tabs", "must", "only", "don't", "不要", "必须", "app/main.py", "a/b", "file.pyc",
    "https://x.io/a/b.py", r"C:\w\x.py", "./src/x.py", "OpenAI", "McCloud", "2024-05-20",
    "7 May 2023", "$1,200", "3 kids", "because", "`ident`", "v2.3.1", "[resolved]", "[done]",
    "[lifted]", "[kept constraint]", "[silently dropped, restored]", "**", "_", "?", "Σ", "ΟΣ",
    "修复", "登录", "-", "1.", "*", "x", "Why", SENTINEL,
]  # fmt: skip
TEXT_ALPHABET = "abcXYZ019 .,:;!?_*`-/\\#()[]\"'Σσ修复é\t"

items = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(alphabet=TEXT_ALPHABET, max_size=12)),
    min_size=1,
    max_size=5,
).map(" ".join)
item_lists = st.lists(items, max_size=8)
bodies = st.one_of(
    item_lists.map(lambda values: "\n".join(f"- {value}" for value in values)),
    st.lists(
        st.one_of(items, st.sampled_from(["### Sub", "## Notes", "", "  - nested"])), max_size=6
    ).map("\n".join),
)
priors = st.fixed_dictionaries(dict.fromkeys(SECTIONS, bodies))

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.one_of(st.sampled_from(["op", "content", "items", "sections"]), st.text(max_size=8)),
            children,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
structured_ops = st.one_of(
    st.just({"op": "KEEP"}),
    st.builds(lambda c: {"op": "UPDATE", "content": c}, bodies),
    st.builds(lambda c: {"op": "update", "content": c}, items),
    st.builds(
        lambda values: {"op": "APPEND", "items": values},
        st.lists(
            st.one_of(items, st.integers(), st.floats(), st.booleans(), st.none()), max_size=6
        ),
    ),
    st.builds(lambda c: {"op": "APPEND", "items": c}, items),
    json_values,
)
ops_strategy = st.builds(
    lambda chosen, wrapped: {"sections": chosen} if wrapped else chosen,
    st.dictionaries(st.sampled_from([s.value for s in SECTIONS]), structured_ops),
    st.booleans(),
)


@SETTINGS
@given(prior=priors, arguments=st.one_of(ops_strategy, json_values))
def test_merge_never_raises(prior: dict[Section, str], arguments: Any) -> None:
    result = merge(prior, arguments, counter=words)
    assert [decision.section for decision in result.decisions] == list(SECTIONS)
    assert parse(result.markdown).sections == result.sections
    assert result.total_tokens >= 0


def _open_issue(item: str) -> bool:
    return not markers_of(item) & {Marker.RESOLVED, Marker.DONE, Marker.RESTORED}


@SETTINGS
@given(prior=priors, arguments=ops_strategy)
def test_protected_items_of_the_prior_survive(prior: dict[Section, str], arguments: Any) -> None:
    result = merge(prior, arguments, counter=words)
    after = result.sections
    assert path_set(prior[Section.FILES]) <= path_set(after[Section.FILES])
    before_errors = {normalise(item) for item in split_items(prior[Section.ERRORS])}
    assert before_errors <= {normalise(item) for item in split_items(after[Section.ERRORS])}
    issues = after[Section.OPEN_ISSUES].lower()
    for item in split_items(prior[Section.OPEN_ISSUES]):
        if _open_issue(item):
            assert snippet(item) in issues, item
    tasks = after[Section.TASK_AND_GOALS].lower()
    for item in split_items(prior[Section.TASK_AND_GOALS]):
        if is_constraint(item):
            assert snippet(item) in tasks, item


referenced_ops = ops_strategy.map(
    lambda ops: json_with_references(ops, ["(#3)", "(#2, #9)", "(#40)", "(#0)", "`(#5)`"])
)


def json_with_references(value: Any, references: list[str]) -> Any:
    """Every string of ``value`` with a reference after it, round robin (some out of range)."""
    if isinstance(value, str):
        return f"{value} {references[len(value) % len(references)]}"
    if isinstance(value, list):
        return [json_with_references(entry, references) for entry in value]
    if isinstance(value, dict):
        return {key: json_with_references(entry, references) for key, entry in value.items()}
    return value


@SETTINGS
@given(
    prior=priors,
    arguments=referenced_ops,
    evidence=st.dictionaries(st.integers(1, 12), st.sampled_from(["never use tabs", "x"])),
)
def test_with_provenance_every_item_has_sources_in_range_and_nothing_protected_is_lost(
    prior: dict[Section, str], arguments: Any, evidence: dict[int, str]
) -> None:
    prior_sources = {
        section: tuple(
            ItemSource(item, (n % 12 + 1,), (n % 12 + 1,))
            for n, item in enumerate(split_items(body))
        )
        for section, body in prior.items()
    }
    allowed = SeqRange(1, 12)
    result = merge(
        prior,
        arguments,
        counter=words,
        provenance=Provenance(allowed, prior=prior_sources, evidence=evidence),
    )
    for section in SECTIONS:
        entries = result.sources[section]
        assert [entry.item for entry in entries] == split_items(result.sections[section])
        assert all(seq in allowed for entry in entries for seq in entry.seqs)
        assert all(set(entry.evidence) <= set(entry.seqs) for entry in entries)
    tasks = result.sections[Section.TASK_AND_GOALS].lower()
    for item in split_items(prior[Section.TASK_AND_GOALS]):
        if is_constraint(item):
            assert snippet(item) in tasks, item
    kept = {source_key(entry.item) for entry in result.sources[Section.TASK_AND_GOALS]}
    marked = result.decision(Section.TASK_AND_GOALS).details.get("unsourced", [])
    assert all(source_key(item) in kept for item in marked)  # type: ignore[attr-defined]


emergency_bodies = st.builds(
    lambda extra, base: "\n".join(f"- fact {n}" for n in range(51)) + extra + base,
    st.sampled_from(["", f"\n- {SENTINEL}"]),
    bodies.map(lambda body: f"\n{body}" if body else ""),
)


@SETTINGS
@given(prior_facts=emergency_bodies, op=structured_ops)
def test_emergency_key_facts_never_grow_but_by_sentinel_or_consolidation(
    prior_facts: str, op: Any
) -> None:
    result = merge(
        {Section.KEY_FACTS: prior_facts}, {"sections": {Section.KEY_FACTS.value: op}}, counter=words
    )
    decision = result.decision(Section.KEY_FACTS)
    body = result.sections[Section.KEY_FACTS]
    if decision.applied is OpKind.UPDATE:
        assert decision.reason is Reason.ACCEPTED
        return
    before = canonical_body(prior_facts)
    allowed = {before} if SENTINEL in before else {before, f"{before}\n- {SENTINEL}"}
    assert body in allowed


def _counts(body: str) -> Counter[str]:
    return Counter(normalise(item) for item in split_items(body))


@SETTINGS
@given(prior=priors, arguments=ops_strategy)
def test_merging_the_same_ops_twice_adds_no_duplicates(
    prior: dict[Section, str], arguments: Any
) -> None:
    first = merge(prior, arguments, counter=words)
    second = merge(first.sections, arguments, counter=words)
    located = locate_ops(arguments)
    for section in SECTIONS:
        op, _ = interpret(located.get(section))
        asked = _counts(op.content) if op is not None and op.kind is OpKind.UPDATE else Counter()
        once, twice = _counts(first.sections[section]), _counts(second.sections[section])
        for item, count in twice.items():
            assert count <= max(1, once[item], asked[item]), (section, item)


document_lines = st.lists(
    st.one_of(
        items,
        st.sampled_from(
            [f"## {s.value}" for s in SECTIONS]
            + [
                "# Working Memory",
                "## Notes",
                "### Flights",
                "## **Open Issues** (2):",
                "",
                "  ",
                "#",
                "##Session Title",
                "  ## Current State",
                "\r",
                "\x0b",
            ]
        ),
    ),
    max_size=20,
).map("\n".join)


@SETTINGS
@given(text=document_lines)
def test_render_then_parse_is_the_identity(text: str) -> None:
    document = parse(text)
    assert parse(render(document.sections)).sections == document.sections
    assert render(parse(render(document.sections)).sections) == render(document.sections)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies_by_section=st.fixed_dictionaries(dict.fromkeys(SECTIONS, item_lists)))
def test_canonical_bodies_survive_a_round_trip(bodies_by_section: dict[Section, list[str]]) -> None:
    sections = {
        section: "\n".join(f"- {value}" for value in values).strip()
        for section, values in bodies_by_section.items()
    }
    document = parse(render(sections))
    for section in SECTIONS:
        assert split_items(document.sections[section]) == split_items(sections[section])


@SETTINGS
@given(
    cut=st.integers(min_value=0, max_value=len(VALID)),
    span=st.integers(min_value=0, max_value=40),
    junk=st.text(alphabet='{}[]",:“”\\\n abc', max_size=6),
)
def test_recovery_never_raises_on_damaged_payloads(cut: int, span: int, junk: str) -> None:
    damaged = VALID[:cut] + junk + VALID[cut + span :]
    recovery = recover_arguments(damaged)
    if recovery.arguments is not None:
        merge({}, recovery.arguments, counter=words)


@SETTINGS
@given(text=st.text(max_size=300))
def test_recovery_never_raises_on_any_text(text: str) -> None:
    recover_arguments(text)


messages = st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["system", "user", "assistant", "tool", "other"]),
            "content": st.one_of(
                st.none(), items, st.lists(st.fixed_dictionaries({"text": items}))
            ),
        },
        optional={
            "name": st.sampled_from(["Ann", "Bob", ""]),
            "tool_call_id": st.sampled_from(["c1", "c2"]),
            "tool_calls": st.lists(
                st.fixed_dictionaries(
                    {
                        "id": st.sampled_from(["c1", "c2"]),
                        "function": st.fixed_dictionaries(
                            {
                                "name": st.sampled_from(["open", "think", "run"]),
                                "arguments": st.one_of(items, json_values),
                            }
                        ),
                    }
                ),
                max_size=2,
            ),
        },
    ),
    max_size=8,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=messages, prior=priors)
def test_the_extractor_never_raises_and_its_ops_are_valid(
    batch: list[dict[str, Any]], prior: dict[Section, str]
) -> None:
    arguments = extract_ops(batch, prior, counter=words)
    assert UPDATE_VALIDATOR.is_valid(arguments)
    merge(prior, arguments, counter=words)
