"""The model-backed extractor's side: the ``record_memories`` tool, its prompt, and reading what
the model answered.

Owns the JSON Schema (Draft 2020-12, validated with ``jsonschema``) that the model is forced to
call, the prompt that shows archived messages numbered ``#seq``, and the strict-then-lenient
reading of the arguments: a valid payload is used whole; otherwise each proposed memory that
matches the item schema is kept and the others are counted as ``invalid_item``; seqs outside the
archive are dropped, and a memory citing none is ``unsourced``. Pure; never calls the model.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from jsonschema import Draft202012Validator

from app.memories import rules
from app.memories.records import Candidate, Category, Extraction, SkipReason
from app.wm.messages import read_messages
from app.wm.prompts import render_message

TOOL_NAME: Final = "record_memories"
EXTRACTOR: Final = "model"
PROMPT_VERSION: Final = "memories-prompt-2026-12-v2"
MAX_CONTENT_CHARS: Final = 500

_ITEM_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": [category.value for category in Category]},
        "content": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_CONTENT_CHARS,
            "description": "One self-contained fact about the user, in their own words where "
            "possible.",
        },
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "source_seqs": {
            "type": "array",
            "items": {"type": "integer", "minimum": 1},
            "minItems": 1,
            "description": "The #numbers of the messages that state it.",
        },
        "slot": {
            "type": ["string", "null"],
            "maxLength": 100,
            "description": "For a preference or profile fact: the attribute it gives a value of "
            "(for example 'favorite color', 'lives in', 'likes:coffee').",
        },
        "slot_value": {"type": ["string", "null"], "maxLength": 100},
    },
    "required": ["category", "content", "confidence", "source_seqs"],
    "additionalProperties": False,
}

ARGUMENTS_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "memories": {"type": "array", "items": _ITEM_SCHEMA},
        "skipped": {
            "type": "array",
            "description": "Messages that hold no durable fact, and why.",
            "items": {
                "type": "object",
                "properties": {
                    "seq": {"type": "integer", "minimum": 1},
                    "reason": {
                        "type": "string",
                        "enum": [
                            SkipReason.CHIT_CHAT.value,
                            SkipReason.QUESTION.value,
                            SkipReason.NO_DURABLE_FACT.value,
                            SkipReason.LOW_CONFIDENCE.value,
                        ],
                    },
                },
                "required": ["reason"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["memories"],
    "additionalProperties": False,
}

RECORD_MEMORIES_TOOL: Final[dict[str, Any]] = {
    "name": TOOL_NAME,
    "description": "Record the durable facts about the user that these messages state.",
    "parameters": {key: value for key, value in ARGUMENTS_SCHEMA.items() if key != "$schema"},
}
"""The function definition passed to ``ChatModel.call_tool``."""

_VALIDATOR: Final = Draft202012Validator(ARGUMENTS_SCHEMA)
_ITEM_VALIDATOR: Final = Draft202012Validator(_ITEM_SCHEMA)

SYSTEM_PROMPT: Final = f"""\
You keep the long-term memory of an assistant: durable facts about its user that stay true
across conversations. Read the archived messages below (each is numbered #seq) and record, with
{TOOL_NAME}, each fact the user states about themselves:
- profile: who they are (name, age, where they live, work, family situation);
- preference: what they like, dislike, prefer, or count as a favourite;
- entity: a named person, pet or thing in their life and how it relates to them;
- event: something they did or that happened to them, with its time when given;
- lesson: an error and its fix, a correction the user made, or something they learned.
Rules: one fact per memory, self-contained and short; only what the messages say, never a guess;
cite the #seq of every message it comes from; skip small talk, questions, and what the assistant
says about itself; give a confidence from 0 to 1 (below 0.5 for hedged or hypothetical
statements); for a preference or profile fact, name the attribute in "slot" and its value in
"slot_value" so that a later change can replace it: "lives in", "works as" (the job), "works at"
(the employer), "name", "relationship status", "diet", "has pet:<kind>" (value "yes"),
"likes:<thing>" (value "yes" or "no"), "favorite <thing>", and for a preference between two
things "prefers:<a>|<b>" with the two things in alphabetical order and the preferred one as the
value; a value the user no longer holds ("I no longer live in Berlin") is "not <value>". Record
nothing when nothing qualifies."""


class UnusableArguments(Exception):
    """The model's answer is not a ``record_memories`` call that can be read at all."""


def user_prompt(messages: Sequence[tuple[int, Mapping[str, object]]]) -> str:
    """The archived messages, one block each, as ``#seq [speaker]: text``."""
    seqs = [seq for seq, _ in messages]
    blocks = []
    for view in read_messages([message for _, message in messages]):
        rendered = render_message(view)
        if rendered:
            blocks.append(f"#{seqs[view.position]} {rendered}")
    return "\n\n".join(blocks) if blocks else "(no messages)"


def _label(value: object) -> str | None:
    return " ".join(value.lower().split()) or None if isinstance(value, str) else None


def _candidate(item: Mapping[str, Any], seqs: tuple[int, ...]) -> Candidate:
    category = Category(item["category"])
    content = " ".join(str(item["content"]).split())
    slot, value = _label(item.get("slot")), _label(item.get("slot_value"))
    # A memory worded as the user said it gets the attribute the rules give that sentence, so
    # that the same change of mind supersedes whichever extractor read it.
    ruled = rules.classify(content, seqs[0], after_agent=False)
    if ruled is not None and ruled.category is category and ruled.slot is not None:
        slot, value = ruled.slot, ruled.slot_value
    return Candidate(
        category=category,
        content=content,
        confidence=float(item["confidence"]),
        source_seqs=seqs,
        slot=slot,
        slot_value=value,
        rule="model",
    )


def read_arguments(arguments: str | None, archive_seqs: Collection[int]) -> Extraction:
    """The candidates of a ``record_memories`` call; ``UnusableArguments`` when there is no
    call, the arguments are not a JSON object, or they carry no list of memories."""
    if arguments is None:
        raise UnusableArguments("the model did not call record_memories")
    try:
        payload = json.loads(arguments)
    except (ValueError, RecursionError) as error:
        raise UnusableArguments("record_memories arguments are not JSON") from error
    if not isinstance(payload, dict) or not isinstance(payload.get("memories"), list):
        raise UnusableArguments("record_memories arguments carry no list of memories")
    skipped: Counter[str] = Counter()
    valid = _VALIDATOR.is_valid(payload)
    reasons = payload.get("skipped")
    for entry in reasons if isinstance(reasons, list) else ():
        reason = entry.get("reason") if isinstance(entry, dict) else None
        if reason in {value.value for value in SkipReason}:
            skipped[str(reason)] += 1
    candidates: list[Candidate] = []
    for item in payload["memories"]:
        if not valid and not _ITEM_VALIDATOR.is_valid(item):
            skipped[SkipReason.INVALID_ITEM.value] += 1
            continue
        seqs = tuple(sorted({seq for seq in item["source_seqs"] if seq in archive_seqs}))
        if not seqs:
            skipped[SkipReason.UNSOURCED.value] += 1
            continue
        candidates.append(_candidate(item, seqs))
    return Extraction(tuple(candidates), dict(skipped), EXTRACTOR)
