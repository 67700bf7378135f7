"""Guards against the source: the shadow prior restores what a proposal left out, at creation
and at update, as ``source_restored`` decisions."""

from __future__ import annotations

import pytest

from app.wm.guards import SENTINEL, GuardContext
from app.wm.merge import merge
from app.wm.ops import OpKind
from app.wm.provenance import Provenance
from app.wm.reasons import Guard, Reason
from app.wm.references import SeqRange
from app.wm.sections import SECTIONS, Section
from app.wm.source import Shadow, restore_from_source
from app.wm.thresholds import DEFAULT_CONFIG, GuardConfig
from tests.wm.helpers import bullets, keep, ops_for, update, words


def _shadow(section: Section, body: str, cited: dict[str, tuple[int, ...]] | None = None) -> Shadow:
    return Shadow({section: body}, cited or {})


def _ctx(config: GuardConfig = DEFAULT_CONFIG) -> GuardContext:
    return GuardContext(config, words)


@pytest.mark.parametrize(
    ("section", "shadow", "body", "restored"),
    [
        # Task & Goals: a constraint left out comes back under [kept constraint]
        (
            Section.TASK_AND_GOALS,
            "- Never push directly to main.",
            "- Fix the file",
            ["[kept constraint] Never push directly to main."],
        ),
        # a paraphrase keeps it (same polarity, half the content words or more)
        (Section.TASK_AND_GOALS, "- Never push directly to main.", "- Do not push to main", []),
        # an inversion does not
        (
            Section.TASK_AND_GOALS,
            "- Never push directly to main.",
            "- Always push directly to main",
            ["[kept constraint] Never push directly to main."],
        ),
        # a request that states no constraint is the model's to word
        (Section.TASK_AND_GOALS, "- Please fix the login page", "- Fix login", []),
        # a goal that repeats the user's words is the task, not a constraint: never restored
        (
            Section.TASK_AND_GOALS,
            "- Goal: Never push directly to main\n- Never push directly to main.",
            "",
            ["[kept constraint] Never push directly to main."],
        ),
        # Files: a path lost comes back with its line; a path kept is enough
        (
            Section.FILES,
            "- src/a.py (mentioned by User)\n- src/b.py (edited)",
            "- src/b.py: the parser",
            ["src/a.py (mentioned by User)"],
        ),
        (Section.FILES, "- src/a.py (mentioned by User)", "- `src/a.py` entry point", []),
        # a path paraphrased is a path lost
        (
            Section.FILES,
            "- app/billing/models.py (read)",
            "- app/billing/model.py (read)",
            ["app/billing/models.py (read)"],
        ),
        # Errors: an error line left out
        (
            Section.ERRORS,
            "- ImportError: cannot import name 'x' from 'app.a'",
            "",
            ["ImportError: cannot import name 'x' from 'app.a'"],
        ),
        # a paraphrase keeps an error line only with 80 % of its words: 3 of 4 is not enough
        (
            Section.ERRORS,
            "- ImportError: cannot import name 'x' from 'app.a'",
            "- ImportError for name x in app.a",
            ["ImportError: cannot import name 'x' from 'app.a'"],
        ),
        (
            Section.ERRORS,
            "- ImportError: cannot import name 'x' from 'app.a'",
            "- ImportError: name x cannot import from app.a",
            [],
        ),
        # a short question is kept by its own words only, not by another of the same speaker
        (
            Section.OPEN_ISSUES,
            "- Question from Ann: How about you?",
            "- Question from Ann: Where do you live?",
            ["[silently dropped, restored] Question from Ann: How about you?"],
        ),
        # two errors of one call share half their words: both stay
        (
            Section.ERRORS,
            "- update: Error: gift card balance is not enough",
            "- update: Error: not enough seats on flight HAT229",
            ["update: Error: gift card balance is not enough"],
        ),
        # Open Issues: open items come back under the restored marker; closed ones do not
        (
            Section.OPEN_ISSUES,
            "- TODO: add tests for the parser\n- [resolved] Which port to use?",
            "",
            ["[silently dropped, restored] TODO: add tests for the parser"],
        ),
        (
            Section.OPEN_ISSUES,
            "- TODO: add tests for the parser",
            "- [resolved] TODO: add tests for the parser",
            [],
        ),
        # Key Facts: a dated fact whose date is missing; one whose date is kept is not
        (
            Section.KEY_FACTS,
            "- Deadline is 2024-07-01.\n- The team likes coffee",
            "- Deadline moved to 2024-07-10",
            ["Deadline is 2024-07-01."],
        ),
        (Section.KEY_FACTS, "- Deadline is 2024-07-01.", "- Due 2024-07-01", []),
        (Section.KEY_FACTS, "- The team likes coffee", "", []),
        # one kept line stands in for one watched item: a second user's paraphrase comes back
        (
            Section.TASK_AND_GOALS,
            "- I do not need travel insurance, thanks.\n- I don't need travel insurance, thank you.",
            "- I do not need travel insurance, thanks.",
            ["[kept constraint] I don't need travel insurance, thank you."],
        ),
        # ... and is kept when the body holds a paraphrase of each
        (
            Section.TASK_AND_GOALS,
            "- I do not need travel insurance, thanks.\n- I don't need travel insurance, thank you.",
            "- I do not need travel insurance, thanks.\n- I do not need any travel insurance, thank you",
            [],
        ),
        # the exact holder is matched first, whatever the order of the watched items
        (
            Section.TASK_AND_GOALS,
            "- I don't need travel insurance, thank you.\n- I do not need travel insurance, thanks.",
            "- I do not need travel insurance, thanks.",
            ["[kept constraint] I don't need travel insurance, thank you."],
        ),
        # two errors sharing their first 40 characters are two errors
        (
            Section.ERRORS,
            "- book: Error: payment amount does not add up, total is 608\n"
            "- book: Error: payment amount does not add up, total is 305",
            "- book: Error: payment amount does not add up, total is 608",
            ["book: Error: payment amount does not add up, total is 305"],
        ),
        # sections without a source rule
        (Section.SESSION_TITLE, "Billing fix", "Other", []),
        (Section.CURRENT_STATE, "Working", "", []),
        # an empty shadow restores nothing
        (Section.FILES, "", "", []),
    ],
)
def test_restore_table(section: Section, shadow: str, body: str, restored: list[str]) -> None:
    assert restore_from_source(section, body, _shadow(section, shadow), _ctx()) == restored


def test_key_facts_restoration_respects_the_size_states() -> None:
    config = GuardConfig(key_facts_max_items=2, key_facts_emergency_items=4, oversized_append_cap=1)
    shadow = _shadow(Section.KEY_FACTS, bullets(["On 2024-01-01 x", "On 2024-01-02 y"]))
    # normal (1 item): both dated facts come back
    assert len(restore_from_source(Section.KEY_FACTS, "- a", shadow, _ctx(config))) == 2
    # oversized (3 items): throttled to the cap
    oversized = bullets(["a", "b", "c"])
    assert restore_from_source(Section.KEY_FACTS, oversized, shadow, _ctx(config)) == [
        "On 2024-01-01 x"
    ]
    # emergency (5 items): nothing, and never the sentinel; nor once it is there
    emergency = bullets(["a", "b", "c", "d", "e"])
    assert restore_from_source(Section.KEY_FACTS, emergency, shadow, _ctx(config)) == []
    stopped = f"{emergency}\n- {SENTINEL}"
    assert restore_from_source(Section.KEY_FACTS, stopped, shadow, _ctx(config)) == []


def test_an_open_item_restored_once_comes_back_again_only_when_messages_raised_it() -> None:
    body = "- [silently dropped, restored] Which port to use?"
    raised = Shadow({Section.OPEN_ISSUES: body}, {"which port to use": (4,)})
    assert restore_from_source(Section.OPEN_ISSUES, "", raised, _ctx()) == [
        "[silently dropped, restored] Which port to use?"
    ]
    invented = Shadow({Section.OPEN_ISSUES: body}, {})
    assert restore_from_source(Section.OPEN_ISSUES, "", invented, _ctx()) == []


def test_an_item_the_trust_rules_marked_in_the_prior_is_never_given_back() -> None:
    from app.wm.source import refused_items

    prior = "- [unsourced] Always route payments through escrow\n- Never push to main"
    refused = refused_items(prior)
    assert refused == frozenset({"always route payments through escrow"})
    shadow = Shadow(
        {Section.TASK_AND_GOALS: "- Always route payments through escrow\n- Never push to main"},
        refused=refused,
    )
    assert restore_from_source(Section.TASK_AND_GOALS, "", shadow, _ctx()) == [
        "[kept constraint] Never push to main"
    ]


def test_at_most_fifty_lines() -> None:
    shadow = _shadow(Section.FILES, bullets([f"src/m{i}.py" for i in range(60)]))
    assert len(restore_from_source(Section.FILES, "", shadow, _ctx())) == 50


def test_a_creation_that_leaves_everything_out_is_restored() -> None:
    shadow = Shadow(
        {
            Section.TASK_AND_GOALS: "- Never push directly to main.",
            Section.FILES: "- src/a.py (mentioned by User)",
        },
        {"never push directly to main": (1,), "src/a.py (mentioned by user)": (1,)},
    )
    ops = {"sections": {s.value: keep() for s in SECTIONS}}
    ops["sections"][Section.SESSION_TITLE.value] = update("Fix a file")
    result = merge(
        {},
        ops,
        counter=words,
        provenance=Provenance(SeqRange(1, 1), evidence={1: "never push directly to main."}),
        shadow=shadow,
    )
    task = result.decision(Section.TASK_AND_GOALS)
    assert task.reason is Reason.SOURCE_RESTORED
    assert task.guard is Guard.SOURCE_RETENTION
    assert task.applied is OpKind.APPEND
    assert task.details["source_restored"] == ["[kept constraint] Never push directly to main."]
    assert "guard_reason" not in task.details
    assert (
        result.sections[Section.TASK_AND_GOALS]
        == "- [kept constraint] Never push directly to main."
    )
    # the restored items carry the shadow's sources, and the constraint its evidence
    (constraint,) = result.sources[Section.TASK_AND_GOALS]
    assert constraint.seqs == (1,)
    assert constraint.evidence == (1,)
    (path,) = result.sources[Section.FILES]
    assert path.seqs == (1,)
    assert result.decision(Section.SESSION_TITLE).reason is Reason.ACCEPTED


def test_an_update_keeps_the_guards_own_reason_in_the_details() -> None:
    prior = {Section.ERRORS: "- E1 failed"}
    shadow = _shadow(Section.ERRORS, "- E1 failed\n- ValueError: bad input in parse()")
    result = merge(
        prior,
        ops_for(Section.ERRORS, update("- E1 failed")),
        counter=words,
        shadow=shadow,
    )
    decision = result.decision(Section.ERRORS)
    assert decision.reason is Reason.SOURCE_RESTORED
    assert decision.guard is Guard.APPEND_ONLY
    assert decision.details["guard_reason"] == Reason.ERRORS_APPEND_ONLY.value
    assert decision.applied is OpKind.APPEND
    assert result.sections[Section.ERRORS].endswith("- ValueError: bad input in parse()")


def test_an_update_that_keeps_everything_is_accepted() -> None:
    shadow = _shadow(Section.FILES, "- src/a.py")
    result = merge(
        {}, ops_for(Section.FILES, update("- src/a.py: entry")), counter=words, shadow=shadow
    )
    assert result.decision(Section.FILES).reason is Reason.ACCEPTED
    assert result.decision(Section.FILES).applied is OpKind.UPDATE


def test_restored_items_without_shadow_sources_have_none() -> None:
    shadow = _shadow(Section.FILES, "- src/a.py")
    result = merge(
        {},
        ops_for(Section.FILES, keep()),
        counter=words,
        provenance=Provenance(SeqRange(1, 3)),
        shadow=shadow,
    )
    (entry,) = result.sources[Section.FILES]
    assert entry.item == "src/a.py"
    assert entry.seqs == ()


def test_an_extractor_proposal_is_its_own_shadow() -> None:
    """With sources given beside the ops (the offline path), the shadow adds no citations."""
    shadow = _shadow(Section.FILES, "- src/a.py", {"src/a.py": (2,)})
    result = merge(
        {},
        ops_for(Section.FILES, keep()),
        counter=words,
        provenance=Provenance(SeqRange(1, 3), cited={}),
        shadow=shadow,
    )
    (entry,) = result.sources[Section.FILES]
    assert entry.seqs == ()
