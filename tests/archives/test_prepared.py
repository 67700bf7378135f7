"""Resuming a generation from progress prepared ahead gives exactly the generation from the start,
and every change to what the progress was made of sends the generation back to the start."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from app.archives.generation import Generated, WorkingMemoryGenerator
from app.archives.plan import Plan, Progress, known_of
from app.archives.prepared import (
    FORMAT,
    Checkpoint,
    Resumption,
    checkpoint_of,
    fingerprint,
    resume_point,
)
from app.archives.working_memory import WorkingMemory
from app.llm.openai_provider import OpenAIChatModel
from app.memories.rules import RuleScan
from app.wm.sections import Section
from tests.support.long_sessions import coding_session

GENERATOR = WorkingMemoryGenerator(None, max_input_tokens=5_000)
"""The smallest input budget (2 000 tokens): a few turns a batch."""
CONFIG = "config"
EMPTY = WorkingMemory.empty()


def outcome(generated: Generated) -> tuple[Any, ...]:
    result = generated.result
    return (
        dict(result.sections),
        dict(result.sources),
        result.decisions,
        result.markdown,
        generated.generator,
        generated.note,
        generated.batches,
    )


def stored(checkpoint: Checkpoint) -> Checkpoint:
    """The checkpoint as the database gives it back: JSON whose objects' keys come in another
    order."""
    state = json.loads(json.dumps(checkpoint.state(), sort_keys=True))
    read = checkpoint_of(
        prior_archive_seq=checkpoint.prior_archive_seq,
        first_seq=checkpoint.first_seq,
        end_seq=checkpoint.end_seq,
        budget=checkpoint.budget,
        fingerprint=checkpoint.fingerprint,
        state=state,
    )
    assert read is not None
    return read


async def prepared(
    messages: list[dict[str, Any]],
    done: int,
    *,
    prior: WorkingMemory = EMPTY,
    seqs: list[int] | None = None,
    pinned: frozenset[int] = frozenset(),
    scan: RuleScan | None = None,
) -> tuple[Plan, Checkpoint]:
    plan = GENERATOR.plan(prior, messages, seqs=seqs, pinned_seqs=pinned)
    progress = await GENERATOR.advance(prior, plan, None, done)
    checkpoint = Checkpoint(
        prior_archive_seq=prior.archive_seq,
        first_seq=plan.batches[0][1],
        end_seq=plan.end_seq(done),
        budget=plan.budget,
        fingerprint=fingerprint(plan, done, prior=prior, pinned_seqs=pinned, config=CONFIG),
        progress=progress,
        scan=scan,
    )
    return plan, stored(checkpoint)


async def resumed(
    messages: list[dict[str, Any]],
    checkpoint: Checkpoint | None,
    *,
    prior: WorkingMemory = EMPTY,
    seqs: list[int] | None = None,
    pinned: frozenset[int] = frozenset(),
) -> tuple[Generated, Progress | None]:
    resumption = Resumption(checkpoint, prior=prior, pinned_seqs=pinned, config=CONFIG)
    generated = await GENERATOR.generate(
        prior, messages, seqs=seqs, pinned_seqs=pinned, resume=resumption
    )
    return generated, resumption.progress


async def test_the_session_takes_many_batches() -> None:
    assert len(GENERATOR.plan(EMPTY, coding_session(30)).batches) >= 5


@pytest.mark.parametrize("turns", [12, 30])
async def test_resuming_after_any_number_of_batches_gives_the_generation_from_the_start(
    turns: int,
) -> None:
    messages = coding_session(turns)
    cold = await GENERATOR.generate(EMPTY, messages)
    for done in range(1, cold.batches):
        _, checkpoint = await prepared(messages, done)
        warm, progress = await resumed(messages, checkpoint)
        assert progress is not None
        assert progress.batches == done
        assert outcome(warm) == outcome(cold)


async def test_resuming_on_a_prior_working_memory_with_pins_gives_the_same() -> None:
    first = coding_session(8, seed=100)
    prior_result = (await GENERATOR.generate(EMPTY, first)).result
    prior = WorkingMemory(
        archive_seq=1,
        covered_end_seq=len(first),
        sections=prior_result.sections,
        sources=prior_result.sources,
    )
    messages = coding_session(24)
    seqs = list(range(len(first) + 1, len(first) + len(messages) + 1))
    pinned = frozenset({seqs[0], seqs[-1]})
    cold = await GENERATOR.generate(prior, messages, seqs=seqs, pinned_seqs=pinned)
    _, checkpoint = await prepared(messages, 3, prior=prior, seqs=seqs, pinned=pinned)
    warm, progress = await resumed(messages, checkpoint, prior=prior, seqs=seqs, pinned=pinned)
    assert progress is not None
    assert outcome(warm) == outcome(cold)


async def test_progress_goes_on_from_an_older_checkpoint_as_from_the_start() -> None:
    shorter, longer = coding_session(16), coding_session(30)
    _, older = await prepared(shorter, 2)
    plan = GENERATOR.plan(EMPTY, longer)
    start = resume_point(
        older, plan, prior=EMPTY, pinned_seqs=frozenset(), config=CONFIG, final=False
    )
    assert start is not None
    assert start.batches == 2
    upto = len(plan.batches) - 1
    going_on = await GENERATOR.advance(EMPTY, plan, start, upto)
    from_start = await GENERATOR.advance(EMPTY, plan, None, upto)
    assert going_on == from_start
    assert await GENERATOR.advance(EMPTY, plan, going_on, upto) is going_on


async def test_a_checkpoint_through_all_of_a_plan_is_left_for_the_preparation_alone() -> None:
    messages = coding_session(12)
    plan, checkpoint = await prepared(messages, len(GENERATOR.plan(EMPTY, messages).batches))
    kwargs: dict[str, Any] = {"prior": EMPTY, "pinned_seqs": frozenset(), "config": CONFIG}
    assert resume_point(checkpoint, plan, **kwargs) is None
    assert resume_point(checkpoint, plan, **kwargs, final=False) is not None


def _quoting(checkpoint: Checkpoint) -> list[dict[str, Any]]:
    """A user message repeating, word for word, every constraint the progress holds (which
    would be their evidence, were it read before the batch that covers it)."""
    task = checkpoint.progress.sections[Section.TASK_AND_GOALS]
    constraints = [line[2:] for line in task.splitlines() if "must" in line]
    assert constraints
    return [{"role": "user", "content": "Remember, you must respect: " + " ".join(constraints)}]


Case = tuple[str, list[dict[str, Any]], dict[str, Any], Checkpoint]


async def refused_cases() -> list[Case]:
    messages = coding_session(30)
    _, checkpoint = await prepared(messages, 3)
    legacy = replace(EMPTY, legacy_text="an old overview")
    return [
        ("no checkpoint", messages, {}, replace(checkpoint, fingerprint="")),
        ("a legacy prior", messages, {"prior": legacy}, checkpoint),
        ("another prior", messages, {"prior": replace(EMPTY, archive_seq=1)}, checkpoint),
        ("another budget", messages, {}, replace(checkpoint, budget=checkpoint.budget + 1)),
        ("another first seq", messages, {}, replace(checkpoint, first_seq=2)),
        ("another end", messages, {}, replace(checkpoint, end_seq=checkpoint.end_seq - 1)),
        (
            "no batch done",
            messages,
            {},
            replace(checkpoint, progress=replace(checkpoint.progress, batches=0)),
        ),
        (
            "a message of the prefix retracted",
            messages[:5] + messages[6:],
            {"seqs": [*range(1, 6), *range(7, len(messages) + 1)]},
            checkpoint,
        ),
        ("a pin added in the prefix", messages, {"pinned": frozenset({3})}, checkpoint),
        (
            "a fingerprint of something else",
            messages,
            {},
            replace(checkpoint, fingerprint=checkpoint.fingerprint[::-1]),
        ),
    ]


async def test_every_change_to_what_the_progress_was_made_of_is_refused() -> None:
    cases = await refused_cases()
    for name, messages, kwargs, checkpoint in cases:
        used = None if name == "no checkpoint" else checkpoint
        cold = await GENERATOR.generate(
            kwargs.get("prior", EMPTY),
            messages,
            seqs=kwargs.get("seqs"),
            pinned_seqs=kwargs.get("pinned", frozenset()),
        )
        warm, progress = await resumed(messages, used, **kwargs)
        assert progress is None, name
        assert outcome(warm) == outcome(cold), name


async def test_another_configuration_is_refused() -> None:
    messages = coding_session(30)
    plan, checkpoint = await prepared(messages, 3)
    kwargs: dict[str, Any] = {"prior": EMPTY, "pinned_seqs": frozenset()}
    assert resume_point(checkpoint, plan, **kwargs, config=CONFIG) is not None
    assert resume_point(checkpoint, plan, **kwargs, config="another") is None


async def test_what_changes_after_the_prefix_alone_is_resumed_and_gives_the_same() -> None:
    messages = coding_session(30)
    plan, checkpoint = await prepared(messages, 3)
    after = plan.end_seq(3) + 2
    cases: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = [
        ("more messages", [*messages, *coding_session(3, seed=500)], {}),
        ("a pin after the prefix", messages, {"pinned": frozenset({after})}),
        (
            "a later user message quoting every constraint so far word for word",
            [*messages, *_quoting(checkpoint)],
            {},
        ),
        (
            "a message after the prefix retracted",
            messages[: after - 1] + messages[after:],
            {"seqs": [*range(1, after), *range(after + 1, len(messages) + 1)]},
        ),
    ]
    for name, changed, kwargs in cases:
        cold = await GENERATOR.generate(
            EMPTY, changed, seqs=kwargs.get("seqs"), pinned_seqs=kwargs.get("pinned", frozenset())
        )
        warm, progress = await resumed(changed, checkpoint, **kwargs)
        assert progress is not None, name
        assert outcome(warm) == outcome(cold), name


async def test_a_model_generation_is_never_prepared_ahead() -> None:
    """A model's answers are not the offline extractor's: nothing made offline stands for them."""
    chat = OpenAIChatModel(
        base_url="http://127.0.0.1:9/v1", api_key="k", model="m", timeout_s=1, max_retries=0
    )
    model = WorkingMemoryGenerator(chat)
    plan = model.plan(EMPTY, coding_session(2))
    with pytest.raises(ValueError, match="only the offline generation"):
        await model.advance(EMPTY, plan, None, 1)


def _state(**changes: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "format": FORMAT,
        "batches": 1,
        "sections": dict.fromkeys(("Session Title",), ""),
        "sources": [],
        "scan": None,
    }
    state.update(changes)
    return state


@pytest.mark.parametrize(
    "state",
    [
        _state(format=FORMAT + 1),
        _state(format=None),
        _state(),  # six sections missing
        {"format": FORMAT},
        _state(batches="one"),
        _state(sources=[["No Such Section", []]]),
        _state(scan={"candidates": [{"category": "nonsense"}]}),
        _state(scan="not a scan"),
    ],
)
def test_a_state_not_well_formed_is_never_resumed_from(state: dict[str, Any]) -> None:
    read = checkpoint_of(
        prior_archive_seq=0, first_seq=1, end_seq=2, budget=2_000, fingerprint="f", state=state
    )
    assert read is None


def _same(plan: Plan) -> tuple[Any, ...]:
    batches = [(first_seq, list(part)) for part, first_seq in plan.batches]
    return plan.budget, batches, plan.evidence, plan.roles


@pytest.mark.parametrize(
    ("name", "more", "seqs", "pinned", "budget"),
    [
        ("the same messages", 0, None, frozenset(), 5_000),
        ("a turn appended", 12, None, frozenset(), 5_000),
        ("a pin added on a known message", 12, None, frozenset({3, 70}), 5_000),
        ("a known message retracted", 12, "gap at 5", frozenset(), 5_000),
        ("another budget", 12, None, frozenset(), 6_000),
    ],
)
async def test_a_plan_made_with_what_was_known_is_the_plan_made_from_every_message(
    name: str, more: int, seqs: str | None, pinned: frozenset[int], budget: int
) -> None:
    """``budget`` is the generator's input bound (5 000: the known plan's)."""
    messages = coding_session(30)
    ahead = GENERATOR.plan(EMPTY, messages)
    known = known_of(ahead, len(ahead.batches) - 1)
    later = [*messages, *coding_session(more // 4, seed=700)]
    numbers = list(range(1, len(later) + 1))
    if seqs is not None:
        later, numbers = later[:4] + later[5:], numbers[:4] + numbers[5:]
    generator = WorkingMemoryGenerator(None, max_input_tokens=budget)
    with_known = generator.plan(EMPTY, later, seqs=numbers, pinned_seqs=pinned, known=known)
    from_all = generator.plan(EMPTY, later, seqs=numbers, pinned_seqs=pinned)
    assert _same(with_known) == _same(from_all), name


async def test_the_known_messages_are_not_read_again() -> None:
    messages = coding_session(30)
    ahead = GENERATOR.plan(EMPTY, messages)
    done = len(ahead.batches) - 1
    known = known_of(ahead, done)
    # What the known batches hold is left unread: blanked, the plan is still the same.
    blanked = [{"role": "user", "content": ""} for _ in range(len(known.seqs))]
    later = [*blanked, *messages[len(known.seqs) :]]
    with_known = GENERATOR.plan(EMPTY, later, known=known)
    assert (with_known.evidence, with_known.roles) == (ahead.evidence, ahead.roles)
    assert with_known.end_seq(done) == ahead.end_seq(done)
    read_again = GENERATOR.plan(EMPTY, later)
    assert read_again.evidence != ahead.evidence
