"""A batch's decisions replay one-by-one decisions: each candidate sees what the earlier ones did.

The pure replay (``batch.Batch``) is driven with hand-made lookups; the last tests commit such
batches through the API to the real database (one lookup statement, a few writes).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from app.memories.batch import Batch, Found, NeedMore, Stored
from app.memories.changes import DEFAULT_DUPLICATE_SIMILARITY
from app.memories.records import Candidate, Category, EventKind
from tests.conftest import TenantKeys
from tests.memories.helpers import events, memories, new_session, state

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
EARLIER = NOW - timedelta(days=1)
C = Category


def candidate(
    content: str,
    category: Category = C.LESSON,
    slot: str | None = None,
    value: str | None = None,
    confidence: float = 0.7,
) -> Candidate:
    return Candidate(category, content, confidence, (1,), slot, value)


def stored(content: str, distance: float | None, slot: str | None = None, value: str | None = None,
           when: datetime = EARLIER, memory_id: uuid.UUID | None = None) -> Stored:  # fmt: skip
    return Stored(memory_id or uuid.uuid4(), content, slot, value, when, distance)


def run(batch: Batch, days: int | None = None) -> list[tuple[EventKind, str, str | None]]:
    """Each candidate decided and recorded in turn: (kind, reason, content of the target)."""
    done = []
    for index in range(len(batch.candidates)):
        change, _ = batch.decide(index, DEFAULT_DUPLICATE_SIMILARITY)
        batch.apply(index, change, {"content": batch.candidates[index].content}, days)
        target = change.target.content if change.target else None
        done.append((change.kind, change.reason, target))
    return done


def test_a_repeat_later_in_the_batch_restates_the_memory_the_batch_added() -> None:
    batch = Batch(
        [candidate("Pin the client version"), candidate("Pin the client version!")],
        {0: Found(1), 1: Found(2)},
        {(0, 1): 0.01},
        NOW,
    )
    assert run(batch) == [
        (EventKind.ADD, "new", None),
        (EventKind.UPDATE, "near_duplicate", "Pin the client version"),
    ]
    [(category, row)] = batch.written()
    assert (category, row.inserted, row.content) == ("lesson", True, "Pin the client version!")


@pytest.mark.parametrize(("distance", "kind"), [(0.07, EventKind.UPDATE), (0.09, EventKind.ADD)])
def test_the_duplicate_threshold_holds_between_candidates(distance: float, kind: EventKind) -> None:
    batch = Batch([candidate("a b"), candidate("a b c")], {0: Found(1), 1: Found(2)},
                  {(0, 1): distance}, NOW)  # fmt: skip
    assert run(batch)[1][0] is kind


def test_a_change_of_mind_in_one_batch_supersedes_what_the_batch_said_first() -> None:
    first = candidate("I live in Berlin.", C.PROFILE, "lives in", "berlin")
    second = candidate("I moved to Oslo.", C.PROFILE, "lives in", "oslo")
    batch = Batch([first, second], {0: Found(1), 1: Found(2)}, {(0, 1): 0.8}, NOW)
    assert [kind for kind, *_ in run(batch)] == [EventKind.ADD, EventKind.SUPERSEDE]
    rows = {row.content: row for _, row in batch.written()}
    assert rows["I live in Berlin."].superseded_by == rows["I moved to Oslo."].memory_id
    assert not rows["I live in Berlin."].visible


def test_a_stored_memory_restated_twice_keeps_the_last_wording_and_the_higher_confidence() -> None:
    old = stored("I love tea.", 0.0, "likes:tea", "yes")
    first = candidate("I love tea.", C.PREFERENCE, "likes:tea", "yes", confidence=0.9)
    second = candidate("I love tea!", C.PREFERENCE, "likes:tea", "yes", confidence=0.6)
    batch = Batch(
        [first, second],
        {0: Found(1, [old], [old]), 1: Found(2, [old], [old])},
        {(0, 1): 0.0},
        NOW,
    )
    assert [reason for _, reason, _ in run(batch)] == ["same_slot_value", "same_slot_value"]
    [(_, row)] = batch.written()
    assert (row.memory_id, row.inserted, row.content, row.confidence) == (
        old.memory_id,
        False,
        "I love tea!",
        0.9,
    )


def test_the_nearest_is_the_closest_of_stored_and_written_rows() -> None:
    far = stored("Use the staging database", 0.5)
    batch = Batch(
        [candidate("Restart the worker"), candidate("Restart the worker now")],
        {0: Found(1, [far]), 1: Found(2, [far])},
        {(0, 1): 0.02},
        NOW,
    )
    batch.decide(0, DEFAULT_DUPLICATE_SIMILARITY)
    batch.apply(0, batch.decide(0, DEFAULT_DUPLICATE_SIMILARITY)[0], {}, None)
    nearest, _ = batch.lookups(1)
    assert nearest is not None
    assert nearest.content == "Restart the worker"
    assert nearest.similarity == pytest.approx(0.98)


def test_when_every_stored_row_found_was_changed_more_are_asked_for() -> None:
    old = stored("I live in Rome.", 0.3, "lives in", "rome")
    other = stored("I like the sea.", 0.6)
    first = candidate("I moved to Oslo.", C.PROFILE, "lives in", "oslo")
    second = candidate("I work in a port.", C.PROFILE)
    batch = Batch(
        [first, second], {0: Found(1, [old], [old]), 1: Found(1, [old])}, {(0, 1): 0.9}, NOW
    )
    change, _ = batch.decide(0, DEFAULT_DUPLICATE_SIMILARITY)
    assert change.kind is EventKind.SUPERSEDE
    batch.apply(0, change, {}, None)
    with pytest.raises(NeedMore) as more:
        batch.lookups(1)
    assert more.value.index == 1
    assert old.memory_id in more.value.changed
    batch.more(1, [other])
    nearest, _ = batch.lookups(1)
    assert nearest is not None
    assert nearest.content == "I like the sea."


def test_a_short_lookup_holds_every_stored_row_and_needs_no_more() -> None:
    old = stored("I live in Rome.", 0.3, "lives in", "rome")
    first = candidate("I moved to Oslo.", C.PROFILE, "lives in", "oslo")
    second = candidate("I work in a port.", C.PROFILE)
    batch = Batch(
        [first, second], {0: Found(1, [old], [old]), 1: Found(2, [old])}, {(0, 1): 0.9}, NOW
    )
    run(batch)
    assert batch.lookups(1)[0] is not None  # the Oslo memory the batch added


def test_same_slot_rows_are_newest_first_then_by_id() -> None:
    ids = sorted(uuid.uuid4() for _ in range(3))
    older = stored("I like jazz.", 0.4, "likes:jazz", "yes", EARLIER - timedelta(days=1), ids[0])
    newer = stored("I like jazz a lot.", 0.4, "likes:jazz", "yes", EARLIER, ids[2])
    third = candidate("I like jazz, really.", C.PREFERENCE, "likes:misc", "yes")
    asked = candidate("I don't like jazz.", C.PREFERENCE, "likes:jazz", "no")
    batch = Batch(
        [third, asked],
        {0: Found(1), 1: Found(2, [older, newer], [older, newer])},
        {(0, 1): 0.5},
        NOW,
    )
    _, same_slot = batch.lookups(1)
    assert [row.content for row in same_slot] == ["I like jazz a lot.", "I like jazz."]


@pytest.mark.parametrize(("days", "visible"), [(None, True), (1, True), (0, False)])
def test_a_memory_that_expires_at_once_is_gone_for_the_next_candidates(
    days: int | None, visible: bool
) -> None:
    batch = Batch([candidate("a b"), candidate("a b")], {0: Found(1), 1: Found(2)},
                  {(0, 1): 0.0}, NOW)  # fmt: skip
    kinds = [kind for kind, *_ in run(batch, days)]
    assert kinds == [EventKind.ADD, EventKind.UPDATE if visible else EventKind.ADD]


async def test_one_commit_that_changes_its_mind_stores_what_it_said_last(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    session = await new_session(client, tenant, "dana")
    await state(client, tenant, session, "I live in Rome.")
    archive = await state(
        client,
        tenant,
        session,
        "I moved to Berlin last month.",
        "I've learned that night trains are cheaper.",
        "I moved to Oslo last month.",
        "I've learned that night trains are cheaper!",
        "I no longer live in Oslo.",
    )
    report = archive["memories"]
    # The two wordings of the lesson are one candidate; each move supersedes the one before it,
    # the first one stored by the earlier commit, the others said earlier in this one.
    assert (report["added"], report["updated"], report["superseded"]) == (1, 0, 3)
    stored = await memories(client, tenant.reader, include_superseded="true")
    by_content = {memory["content"]: memory for memory in stored}
    rome, berlin, oslo = (
        by_content[f"I moved to {city} last month."]
        if city != "Rome"
        else by_content["I live in Rome."]
        for city in ("Rome", "Berlin", "Oslo")
    )
    withdrawal = by_content["I no longer live in Oslo."]
    assert rome["superseded_by"] == berlin["id"]
    assert berlin["superseded_by"] == oslo["id"]
    assert oslo["superseded_by"] == withdrawal["id"]
    assert withdrawal["superseded_by"] is None
    lesson = by_content["I've learned that night trains are cheaper."]
    assert [event["event"] for event in await events(client, tenant.reader, lesson["id"])] == [
        "ADD"
    ]
