"""The ``record_memories`` tool and the model-backed extractor, through the scripted model."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest
from jsonschema import Draft202012Validator

from app.llm.fakes import ScriptedChatModel, no_tool_call, tool_call
from app.llm.ports import TransientModelError
from app.memories.extraction import MemoryExtractor
from app.memories.hashing import HashingEmbedder
from app.memories.records import Category, FailureStage
from app.memories.tool import (
    ARGUMENTS_SCHEMA,
    PROMPT_VERSION,
    RECORD_MEMORIES_TOOL,
    TOOL_NAME,
    UnusableArguments,
    read_arguments,
    user_prompt,
)

Message = Mapping[str, object]

MESSAGES: list[tuple[int, Message]] = [
    (21, {"role": "user", "content": "Hi! I moved to Lisbon last month."}),
    (22, {"role": "assistant", "content": "Welcome to Portugal!"}),
    (23, {"role": "user", "name": "Dana", "content": "My favourite food is bacalhau."}),
]


def memory(content: str, seqs: list[int]) -> dict[str, object]:
    return {"category": "preference", "content": content, "confidence": 0.9, "source_seqs": seqs}


def test_the_schema_is_a_valid_draft_2020_12_schema_and_the_tool_hides_the_dialect() -> None:
    Draft202012Validator.check_schema(ARGUMENTS_SCHEMA)
    assert RECORD_MEMORIES_TOOL["name"] == TOOL_NAME
    assert "$schema" not in RECORD_MEMORIES_TOOL["parameters"]


def test_a_valid_payload_is_used_whole() -> None:
    arguments = json.dumps(
        {
            "memories": [
                {
                    "category": "profile",
                    "content": "Lives in  Lisbon\nsince last month",
                    "confidence": 0.9,
                    "source_seqs": [21, 99],
                    "slot": " Lives In ",
                    "slot_value": "Lisbon",
                },
                memory("Favourite food is bacalhau", [23]),
            ],
            "skipped": [{"seq": 22, "reason": "chit_chat"}],
        }
    )
    extraction = read_arguments(arguments, {21, 22, 23})
    assert extraction.extractor == "model"
    assert [
        (c.category, c.content, c.source_seqs, c.slot, c.slot_value) for c in extraction.candidates
    ] == [
        (Category.PROFILE, "Lives in Lisbon since last month", (21,), "lives in", "lisbon"),
        (Category.PREFERENCE, "Favourite food is bacalhau", (23,), None, None),
    ]
    assert extraction.skipped == {"chit_chat": 1}


@pytest.mark.parametrize(
    ("content", "slot", "value", "stored_slot", "stored_value"),
    [
        # Worded as the user said it: the rules' attribute, whatever the model named.
        ("I prefer spaces over tabs now.", "likes:spaces", "yes", "prefers:space|tab", "space"),
        ("I live in Munich now.", "home", "Munich", "lives in", "munich"),
        ("I no longer live in Berlin.", "home", "none", "lives in", "not berlin"),
        # Worded otherwise, or an attribute the rules do not know: the model's.
        ("Prefers spaces over tabs", "prefers:space|tab", "space", "prefers:space|tab", "space"),
        ("I'm allergic to cats.", "allergy", "cats", "allergy", "cats"),
    ],
)
def test_a_memory_worded_as_the_user_said_it_gets_the_rules_attribute(
    content: str, slot: str, value: str, stored_slot: str, stored_value: str
) -> None:
    category = "preference" if "prefer" in content.lower() else "profile"
    item = {
        "category": category,
        "content": content,
        "confidence": 0.9,
        "source_seqs": [4],
        "slot": slot,
        "slot_value": value,
    }
    [candidate] = read_arguments(json.dumps({"memories": [item]}), {4}).candidates
    assert (candidate.slot, candidate.slot_value) == (stored_slot, stored_value)


def test_invalid_items_are_dropped_one_by_one_and_counted() -> None:
    arguments = json.dumps(
        {
            "memories": [
                memory("Favourite food is bacalhau", [23]),
                {"category": "gossip", "content": "x", "confidence": 0.9, "source_seqs": [23]},
                {"category": "event", "content": "Moved", "confidence": 3, "source_seqs": [21]},
                "not an object",
                memory("Cites nothing of this archive", [5, 6]),
            ],
            "extra": True,
        }
    )
    extraction = read_arguments(arguments, {21, 22, 23})
    assert [c.content for c in extraction.candidates] == ["Favourite food is bacalhau"]
    assert extraction.skipped == {"invalid_item": 3, "unsourced": 1}


@pytest.mark.parametrize(
    "arguments",
    [None, "", "not json", "[]", '{"memories": "none"}', '{"skipped": []}'],
)
def test_unusable_arguments(arguments: str | None) -> None:
    with pytest.raises(UnusableArguments):
        read_arguments(arguments, {1})


def test_the_prompt_numbers_messages_by_seq() -> None:
    prompt = user_prompt(MESSAGES)
    assert prompt.splitlines()[0] == "#21 [user]: Hi! I moved to Lisbon last month."
    assert "#23 [Dana]: My favourite food is bacalhau." in prompt
    assert user_prompt([]) == "(no messages)"


async def test_the_model_extractor_calls_the_tool_and_embeds_what_it_keeps() -> None:
    chat = ScriptedChatModel(
        [
            tool_call(
                json.dumps(
                    {
                        "memories": [
                            memory("Favourite food is bacalhau, a salted cod dish", [23]),
                            {**memory("Might like surfing on weekends", [21]), "confidence": 0.2},
                        ]
                    }
                ),
                prompt_tokens=120,
                completion_tokens=30,
            )
        ]
    )
    prepared = await MemoryExtractor(HashingEmbedder(), chat=chat, mode="model").prepare(MESSAGES)
    assert prepared.failed is None
    assert [c.content for c in prepared.extraction.candidates] == [
        "Favourite food is bacalhau, a salted cod dish"
    ]
    assert prepared.extraction.skipped == {"low_confidence": 1}
    assert len(prepared.vectors) == 1
    assert prepared.embedding_model == "hashing:v1:384"
    [call] = chat.calls
    assert call.tool["name"] == TOOL_NAME
    assert "#23" in call.user
    report = prepared.report(added=1)
    assert (report.extractor, report.calls, report.prompt_tokens, report.completion_tokens) == (
        "model",
        1,
        120,
        30,
    )
    assert report.prompt_version == PROMPT_VERSION


async def test_an_unavailable_model_falls_back_to_the_rules() -> None:
    chat = ScriptedChatModel([TransientModelError("model request timed out", code="timeout")])
    prepared = await MemoryExtractor(HashingEmbedder(), chat=chat, mode="model").prepare(MESSAGES)
    assert prepared.failed is None
    assert prepared.extraction.extractor == "rules_fallback"
    assert [c.content for c in prepared.extraction.candidates] == [
        "I moved to Lisbon last month.",
        "My favourite food is bacalhau.",
    ]


async def test_without_fallback_a_model_failure_is_a_failed_extraction() -> None:
    chat = ScriptedChatModel([no_tool_call("I would rather not.")])
    extractor = MemoryExtractor(HashingEmbedder(), chat=chat, mode="model", fallback="none")
    prepared = await extractor.prepare(MESSAGES)
    assert prepared.failed is not None
    assert (prepared.failed.stage, prepared.failed.error) == (
        FailureStage.EXTRACT,
        "the model did not call record_memories",
    )
    assert prepared.report().as_json()["failed"] == {
        "stage": "extract",
        "error": "the model did not call record_memories",
    }


async def test_an_unexpected_error_is_a_failed_extraction_not_a_crash() -> None:
    chat = ScriptedChatModel([])  # a call beyond the script raises
    extractor = MemoryExtractor(HashingEmbedder(), chat=chat, mode="model", fallback="none")
    prepared = await extractor.prepare(MESSAGES)
    assert prepared.failed is not None
    assert prepared.failed.stage is FailureStage.EXTRACT
    assert prepared.failed.error.startswith("ScriptExhaustedError")


async def test_nothing_worth_keeping_is_a_report_of_zeros_not_a_failure() -> None:
    chat_free = MemoryExtractor.offline()
    prepared = await chat_free.prepare([(1, {"role": "user", "content": "Hey! How are you?"})])
    report = prepared.report()
    assert report.as_json() == {
        "extractor": "rules",
        "added": 0,
        "updated": 0,
        "superseded": 0,
        "skipped": {"question": 1},
        "failed": None,
        "usage": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0},
        "prompt_version": None,
    }


def test_the_model_extractor_needs_a_model() -> None:
    with pytest.raises(ValueError, match="chat model"):
        MemoryExtractor(HashingEmbedder(), mode="model")
