"""The pure decisions of long-term memory: value filter, ADD/UPDATE/SUPERSEDE, recall order."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from app.memories.candidates import ValueConfig, merge_repeats, value_filter
from app.memories.changes import Existing, decide
from app.memories.ranking import newest_first_among_conflicts
from app.memories.records import (
    Candidate,
    Category,
    EventKind,
    Extraction,
    SearchHit,
    StoredMemory,
)

C = Category


def candidate(
    content: str = "I love hiking in the mountains",
    *,
    category: Category = C.PREFERENCE,
    confidence: float = 0.8,
    seqs: tuple[int, ...] = (3,),
    slot: str | None = None,
    value: str | None = None,
) -> Candidate:
    return Candidate(category, content, confidence, seqs, slot, value)


# --- value filter ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("confidence", "kept"),
    [(0.49, False), (0.5, True), (0.51, True)],
)
def test_confidence_threshold(confidence: float, kept: bool) -> None:
    result = value_filter(
        Extraction((candidate(confidence=confidence),), {}, "rules"), ValueConfig(0.5, 3)
    )
    assert bool(result.candidates) is kept
    assert result.skipped == ({} if kept else {"low_confidence": 1})


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        ("I love hiking", False),  # two content words: love, hike
        ("I love hiking mountains", True),  # three
        ("I love hiking tall mountains", True),  # four
    ],
)
def test_content_words_threshold(content: str, kept: bool) -> None:
    result = value_filter(Extraction((candidate(content),), {}, "rules"), ValueConfig(0.5, 3))
    assert bool(result.candidates) is kept
    assert result.skipped == ({} if kept else {"too_short": 1})


def test_skips_add_to_the_extractor_s_own_counts() -> None:
    result = value_filter(
        Extraction((candidate(confidence=0.1),), {"chit_chat": 4, "low_confidence": 1}, "rules")
    )
    assert result.skipped == {"chit_chat": 4, "low_confidence": 2}
    assert result.extractor == "rules"


def test_repeats_in_one_archive_become_one_candidate_citing_every_seq() -> None:
    merged = merge_repeats(
        [
            candidate("I love hiking in the mountains!", seqs=(8,), confidence=0.7),
            candidate("I went to Rome last week", category=C.EVENT, seqs=(9,)),
            candidate("i LOVE hiking in the mountains.", seqs=(4,), confidence=0.8),
            candidate("I love hiking in the mountains", category=C.EVENT, seqs=(5,)),
        ]
    )
    assert [(c.content, c.source_seqs, c.confidence, c.category) for c in merged] == [
        ("I love hiking in the mountains!", (4, 8), 0.8, C.PREFERENCE),
        ("I went to Rome last week", (9,), 0.8, C.EVENT),
        ("I love hiking in the mountains", (5,), 0.8, C.EVENT),
    ]


# --- ADD, UPDATE, SUPERSEDE --------------------------------------------------------------------


def existing(
    similarity: float, slot: str | None = None, value: str | None = None, content: str = "old"
) -> Existing:
    return Existing(uuid.uuid4(), content, slot, value, similarity)


@pytest.mark.parametrize(
    ("similarity", "kind"),
    [(0.9199, EventKind.ADD), (0.92, EventKind.UPDATE), (0.9201, EventKind.UPDATE)],
)
def test_near_duplicate_threshold(similarity: float, kind: EventKind) -> None:
    nearest = existing(similarity)
    change = decide(candidate(), nearest=nearest, same_slot=[], duplicate_similarity=0.92)
    assert change.kind is kind
    assert change.target == (nearest if kind is EventKind.UPDATE else None)
    assert change.reason == ("near_duplicate" if kind is EventKind.UPDATE else "new")


def test_nothing_stored_is_an_add() -> None:
    change = decide(candidate(), nearest=None, same_slot=[])
    assert (change.kind, change.target, change.superseded) == (EventKind.ADD, None, ())


@pytest.mark.parametrize("category", [C.PREFERENCE, C.PROFILE])
def test_another_value_of_the_same_slot_supersedes_every_current_one(category: Category) -> None:
    older = [existing(0.3, "likes:coffee", "yes"), existing(0.2, "likes:coffee", "maybe")]
    change = decide(
        candidate(category=category, slot="likes:coffee", value="no"),
        nearest=existing(0.95),
        same_slot=older,
    )
    assert (change.kind, change.superseded, change.reason) == (
        EventKind.SUPERSEDE,
        tuple(older),
        "contradiction",
    )


def test_the_same_value_of_the_same_slot_is_a_restatement_of_the_newest() -> None:
    newest, other = existing(0.4, "lives in", "lisbon"), existing(0.1, "lives in", "lisbon")
    change = decide(
        candidate(category=C.PROFILE, slot="lives in", value="lisbon"),
        nearest=None,
        same_slot=[newest, other],
    )
    assert (change.kind, change.target, change.reason) == (
        EventKind.UPDATE,
        newest,
        "same_slot_value",
    )


@pytest.mark.parametrize(
    ("stored_values", "value", "kind", "superseded", "reason"),
    [
        # A withdrawal takes back exactly the value it names.
        (["berlin"], "not berlin", EventKind.SUPERSEDE, ["berlin"], "withdrawal"),
        (["munich", "berlin"], "not berlin", EventKind.SUPERSEDE, ["berlin"], "withdrawal"),
        # It says nothing of another value, and repeats itself as a restatement.
        (["munich"], "not berlin", EventKind.ADD, [], "new"),
        ([], "not berlin", EventKind.ADD, [], "new"),
        (["not berlin"], "not berlin", EventKind.UPDATE, [], "same_slot_value"),
        # A new value after a withdrawal supersedes it, as any other value.
        (["not berlin"], "hamburg", EventKind.SUPERSEDE, ["not berlin"], "contradiction"),
    ],
)
def test_a_withdrawal_supersedes_only_the_value_it_takes_back(
    stored_values: list[str],
    value: str,
    kind: EventKind,
    superseded: list[str],
    reason: str,
) -> None:
    rows = [existing(0.3, "lives in", stored_value) for stored_value in stored_values]
    change = decide(
        candidate(category=C.PROFILE, slot="lives in", value=value), nearest=None, same_slot=rows
    )
    assert (change.kind, change.reason) == (kind, reason)
    assert [row.slot_value for row in change.superseded] == superseded


@pytest.mark.parametrize("category", [C.ENTITY, C.EVENT, C.LESSON])
def test_only_preferences_and_profile_facts_can_contradict(category: Category) -> None:
    change = decide(
        candidate(category=category, slot="likes:coffee", value="no"),
        nearest=None,
        same_slot=[existing(0.3, "likes:coffee", "yes")],
    )
    assert change.kind is EventKind.ADD


# --- recall order --------------------------------------------------------------------------------

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def stored(
    name: str, *, age_s: int = 0, slot: str | None = None, category: str = "preference"
) -> StoredMemory:
    memory_id = uuid.uuid5(uuid.NAMESPACE_DNS, name)
    moment = NOW - timedelta(seconds=age_s)
    return StoredMemory(
        memory_id, "u1", None, category, slot, None, name, 0.8, uuid.uuid4(), 1, (1,),
        "hashing:v1:384", None, moment, moment,
    )  # fmt: skip


def hit(memory: StoredMemory) -> SearchHit:
    return SearchHit(memory, 0.5, 1, None, 0.01)


def test_conflicting_recalled_memories_are_shown_newest_first_in_their_places() -> None:
    old = stored("I love coffee", age_s=3600, slot="likes:coffee")
    other = stored("I live in Lisbon", slot="lives in", category="profile")
    new = stored("I don't like coffee any more", slot="likes:coffee")
    unslotted = stored("I went to Rome", category="event")
    ordered = newest_first_among_conflicts([hit(old), hit(other), hit(unslotted), hit(new)])
    assert [h.memory.content for h in ordered] == [
        "I don't like coffee any more",
        "I live in Lisbon",
        "I went to Rome",
        "I love coffee",
    ]
