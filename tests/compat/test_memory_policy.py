"""OpenViking's ``memory_policy`` read into workmem's (tables): its switches and type names, workmem's
own fields beside them, and the field named by every refusal."""

from __future__ import annotations

import pytest

from app.compat.openviking.memory_policy import read_policy
from app.memories.policy import MemoryPolicy, PolicyError
from app.memories.records import Category

C = Category
P = MemoryPolicy

# body, policy read
READ: list[tuple[dict[str, object], MemoryPolicy]] = [
    ({}, P()),
    ({"self": {"enabled": False}}, P(long_term_extraction=False)),
    ({"self": {"enabled": True}}, P(long_term_extraction=True)),
    ({"self": {}}, P()),
    ({"self": None, "peer": None}, P()),
    ({"peer": {"enabled": True}}, P()),
    ({"peer": {"enabled": False}, "self": {"enabled": True}}, P(long_term_extraction=True)),
    ({"self": {"enabled": True}, "long_term_extraction": True}, P(long_term_extraction=True)),
    ({"memory_types": ["preferences"]}, P(memory_types=frozenset({C.PREFERENCE}))),
    (
        {"memory_types": ["profile", "entities", "events", "cases"]},
        P(memory_types=frozenset({C.PROFILE, C.ENTITY, C.EVENT, C.LESSON})),
    ),
    (
        {"memory_types": ["preference", "preferences"]},
        P(memory_types=frozenset({C.PREFERENCE})),
    ),
    ({"working_memory": False}, P(working_memory=False)),
    ({"working_memory": {"enabled": False}}, P(working_memory=False)),
    ({"working_memory": {"enabled": True}}, P(working_memory=True)),
    ({"long_term_extraction": {"enabled": False}}, P(long_term_extraction=False)),
    (
        {"working_memory": True, "self": {"enabled": False}, "memory_types": None},
        P(working_memory=True, long_term_extraction=False),
    ),
]


@pytest.mark.parametrize(("body", "expected"), READ)
def test_openviking_bodies_read(body: dict[str, object], expected: MemoryPolicy) -> None:
    assert read_policy(body) == expected


# body, field named in the error
REFUSED: list[tuple[object, str]] = [
    (None, "memory_policy"),
    ("self", "memory_policy"),
    ({"self": True}, "self"),
    ({"self": {"enabled": "yes"}}, "self"),
    ({"self": {"enabled": True, "scope": "all"}}, "self"),
    ({"peer": False}, "peer"),
    ({"peer": {"enabled": 1}}, "peer"),
    ({"self": {"enabled": False}, "long_term_extraction": True}, "self"),
    ({"memory_types": ["opinions"]}, "memory_types"),
    ({"memory_types": ["tools"]}, "memory_types"),
    ({"memory_types": []}, "memory_types"),
    ({"memory_types": [3]}, "memory_types"),
    ({"agent": {"enabled": True}}, "agent"),
    ({"working_memory": "off"}, "working_memory"),
    ({"working_memory": {"enabled": "off"}}, "working_memory"),
    ({"long_term_extraction": {"on": True}}, "long_term_extraction"),
]


@pytest.mark.parametrize(("body", "field"), REFUSED)
def test_refusals_name_the_field(body: object, field: str) -> None:
    with pytest.raises(PolicyError) as caught:
        read_policy(body)
    assert caught.value.field == field
