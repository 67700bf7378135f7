"""Memory policy: reading a body, resolving session over user over defaults, filtering (tables)."""

from __future__ import annotations

import pytest

from app.memories.policy import (
    ALL_TYPES,
    EVERYTHING,
    EffectivePolicy,
    MemoryPolicy,
    PolicyError,
    keep,
    parse_policy,
    resolve,
)
from app.memories.records import Candidate, Category

C = Category
P = MemoryPolicy

# body, parsed policy
VALID: list[tuple[dict[str, object], MemoryPolicy]] = [
    ({}, P()),
    ({"working_memory": False}, P(working_memory=False)),
    ({"working_memory": True}, P(working_memory=True)),
    ({"working_memory": None}, P()),
    ({"long_term_extraction": False}, P(long_term_extraction=False)),
    ({"long_term_extraction": None, "memory_types": None}, P()),
    ({"memory_types": ["event"]}, P(memory_types=frozenset({C.EVENT}))),
    (
        {"memory_types": ["profile", "preference", "profile"]},
        P(memory_types=frozenset({C.PROFILE, C.PREFERENCE})),
    ),
    ({"memory_types": [c.value for c in C]}, P(memory_types=ALL_TYPES)),
    (
        {"working_memory": False, "long_term_extraction": True, "memory_types": ["lesson"]},
        P(False, True, frozenset({C.LESSON})),
    ),
]


@pytest.mark.parametrize(("body", "expected"), VALID)
def test_valid_bodies_parse(body: dict[str, object], expected: MemoryPolicy) -> None:
    assert parse_policy(body) == expected


# body, field named in the error
INVALID: list[tuple[object, str]] = [
    (None, "memory_policy"),
    ([], "memory_policy"),
    ("off", "memory_policy"),
    ({"working_memory": "false"}, "working_memory"),
    ({"working_memory": 0}, "working_memory"),
    ({"long_term_extraction": 1}, "long_term_extraction"),
    ({"memory_types": []}, "memory_types"),
    ({"memory_types": "event"}, "memory_types"),
    ({"memory_types": ["event", "opinion"]}, "memory_types"),
    ({"memory_types": [1]}, "memory_types"),
    ({"memory_types": ["EVENT"]}, "memory_types"),
    ({"workingMemory": False}, "workingMemory"),
    ({"working_memory": True, "zzz": 1, "aaa": 2}, "aaa"),
]


@pytest.mark.parametrize(("body", "field"), INVALID)
def test_invalid_bodies_name_the_field(body: object, field: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(body)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


EVENT_ONLY = frozenset({C.EVENT})
LESSON_ONLY = frozenset({C.LESSON})

# session policy, user policy, effective policy
RESOLVE: list[tuple[MemoryPolicy | None, MemoryPolicy | None, EffectivePolicy]] = [
    (None, None, EVERYTHING),
    (P(), P(), EVERYTHING),
    (P(working_memory=False), None, EffectivePolicy(False, True, ALL_TYPES)),
    (None, P(working_memory=False), EffectivePolicy(False, True, ALL_TYPES)),
    (P(working_memory=True), P(working_memory=False), EVERYTHING),
    (P(working_memory=False), P(working_memory=True), EffectivePolicy(False, True, ALL_TYPES)),
    (P(long_term_extraction=False), P(), EffectivePolicy(True, False, ALL_TYPES)),
    (P(long_term_extraction=True), P(long_term_extraction=False), EVERYTHING),
    (None, P(memory_types=EVENT_ONLY), EffectivePolicy(True, True, EVENT_ONLY)),
    (
        P(memory_types=LESSON_ONLY),
        P(memory_types=EVENT_ONLY),
        EffectivePolicy(True, True, LESSON_ONLY),
    ),
    (
        P(working_memory=False),
        P(working_memory=True, long_term_extraction=False, memory_types=EVENT_ONLY),
        EffectivePolicy(False, False, EVENT_ONLY),
    ),
]


@pytest.mark.parametrize(("session", "user", "expected"), RESOLVE)
def test_session_wins_field_by_field(
    session: MemoryPolicy | None, user: MemoryPolicy | None, expected: EffectivePolicy
) -> None:
    assert resolve(session, user) == expected


def _candidate(category: Category, seq: int) -> Candidate:
    return Candidate(category=category, content=f"fact {seq}", confidence=0.9, source_seqs=(seq,))


CANDIDATES = [_candidate(C.PROFILE, 1), _candidate(C.EVENT, 2), _candidate(C.LESSON, 3)]

# effective policy, seqs of the candidates kept
KEEP: list[tuple[EffectivePolicy, list[int]]] = [
    (EVERYTHING, [1, 2, 3]),
    (EffectivePolicy(False, True, ALL_TYPES), [1, 2, 3]),
    (EffectivePolicy(True, False, ALL_TYPES), []),
    (EffectivePolicy(True, True, EVENT_ONLY), [2]),
    (EffectivePolicy(True, True, frozenset({C.LESSON, C.PROFILE})), [1, 3]),
    (EffectivePolicy(True, True, frozenset({C.PREFERENCE})), []),
    (EffectivePolicy(True, False, EVENT_ONLY), []),
]


@pytest.mark.parametrize(("policy", "kept"), KEEP)
def test_keep_filters_by_switch_and_category(policy: EffectivePolicy, kept: list[int]) -> None:
    assert [c.source_seqs[0] for c in keep(policy, CANDIDATES)] == kept


@pytest.mark.parametrize(
    ("policy", "stored"),
    [
        (P(), {}),
        (P(working_memory=False), {"working_memory": False}),
        (
            P(True, False, frozenset({C.PROFILE, C.EVENT})),
            {
                "working_memory": True,
                "long_term_extraction": False,
                "memory_types": ["event", "profile"],
            },
        ),
    ],
)
def test_to_json_round_trips(policy: MemoryPolicy, stored: dict[str, object]) -> None:
    assert policy.to_json() == stored
    assert parse_policy(stored) == policy
