"""The generation chain without a database: batching, bounded input, usage and the legacy path."""

from __future__ import annotations

import json

import pytest

from app.archives.generation import WorkingMemoryGenerator, legacy_sections
from app.archives.plan import consecutive_runs
from app.archives.working_memory import WorkingMemory
from app.llm.fakes import ScriptedChatModel, tool_call
from app.wm.sections import Section, empty_sections
from app.wm.tokens import count_tokens

KEEP_ALL = json.dumps({"sections": {s.value: {"op": "KEEP"} for s in Section}})


def prior_with_title() -> WorkingMemory:
    sections = empty_sections()
    sections[Section.SESSION_TITLE] = "Long archive"
    return WorkingMemory(archive_seq=1, covered_end_seq=10, sections=sections)


async def test_a_large_archive_is_processed_in_bounded_batches() -> None:
    words = " ".join(f"word{n}" for n in range(300))
    messages = [{"role": "user", "content": f"message {n}: {words}"} for n in range(120)]
    total = sum(count_tokens(str(m["content"])) for m in messages)
    chat = ScriptedChatModel([tool_call(KEEP_ALL)] * 40)
    generator = WorkingMemoryGenerator(chat, max_input_tokens=8_000)

    generated = await generator.generate(prior_with_title(), messages)

    assert total > 8_000 * 3
    assert generated.batches == len(chat.calls) > 3
    assert generated.usage.calls == len(chat.calls)
    for call in chat.calls:
        assert count_tokens(call.system) + count_tokens(call.user) <= 8_000
    seen = "".join(call.user for call in chat.calls)
    assert all(f"message {n}:" in seen for n in range(120)), "every message reaches a batch"
    assert generated.generator == "llm_update"


async def test_one_huge_message_is_cut_with_a_mark() -> None:
    huge = "A" * 30_000 + " the very end"
    chat = ScriptedChatModel([tool_call(KEEP_ALL)])
    generator = WorkingMemoryGenerator(chat)
    await generator.generate(prior_with_title(), [{"role": "user", "content": huge}])
    [call] = chat.calls
    assert "the very end" in call.user
    assert len(call.user) < 10_000


async def test_mixed_generators_report_the_weakest() -> None:
    words = " ".join(f"w{n}" for n in range(400))
    messages = [{"role": "user", "content": f"m{n} {words}"} for n in range(40)]
    created = tool_call(json.dumps({"markdown": "## Session Title\nLong archive notes"}))
    # Each batch takes a good update, or an unusable one followed by the creation call.
    chat = ScriptedChatModel([tool_call(KEEP_ALL), tool_call("not json"), created] * 20)
    generator = WorkingMemoryGenerator(chat, max_input_tokens=4_000)
    generated = await generator.generate(prior_with_title(), messages)
    assert generated.batches > 2
    assert generated.generator == "llm_create_fallback"
    assert generated.note is not None
    assert "unrecoverable" in generated.note


def test_legacy_text_becomes_key_facts_and_headers_are_respected() -> None:
    sections = legacy_sections("Dana likes tea.\n- Works on Atlas")
    assert sections[Section.KEY_FACTS] == "- Dana likes tea.\n- Works on Atlas"
    with_headers = legacy_sections("## Open Issues\n- Who pays?")
    assert with_headers[Section.OPEN_ISSUES] == "- Who pays?"
    assert with_headers[Section.KEY_FACTS] == ""


CREATED = "# Working Memory\n\n## Session Title\nBilling migration\n\n## Open Issues\n- Stripe keys"


async def test_a_damaged_creation_payload_is_repaired_not_thrown_away() -> None:
    """The creation call's arguments go through the same recovery as an update's: closed when
    truncated after the document, unquoted control characters escaped; only then plain text."""
    damaged = [
        json.dumps({"markdown": CREATED})[:-1],  # cut before the closing brace
        json.dumps({"markdown": CREATED}).replace("\\n", "\n"),  # raw newlines in the string
        "```json\n" + json.dumps({"markdown": CREATED}) + "\n```",  # wrapped in a code fence
    ]
    for arguments in damaged:
        chat = ScriptedChatModel([tool_call(arguments)])
        generated = await WorkingMemoryGenerator(chat).generate(WorkingMemory.empty(), [])
        assert generated.generator == "llm_create", arguments
        assert generated.result.sections[Section.SESSION_TITLE] == "Billing migration"
        assert generated.result.sections[Section.OPEN_ISSUES] == "- Stripe keys"


async def test_an_unusable_creation_payload_falls_back_to_the_offline_extractor() -> None:
    chat = ScriptedChatModel([tool_call('{"markdown": "# Working Memory\\n## Session Ti')])
    messages = [{"role": "user", "content": "Please migrate billing to Stripe"}]
    generated = await WorkingMemoryGenerator(chat).generate(WorkingMemory.empty(), messages)
    assert generated.generator == "offline_fallback"
    assert generated.note == "creation output unusable"


async def test_update_arguments_serialised_twice_are_merged_not_lost() -> None:
    title = {"op": "UPDATE", "content": "Long archive migration"}
    payload = {"sections": {s.value: {"op": "KEEP"} for s in Section}}
    payload["sections"][Section.SESSION_TITLE.value] = title
    chat = ScriptedChatModel([tool_call(json.dumps(json.dumps(payload)))])
    generated = await WorkingMemoryGenerator(chat).generate(prior_with_title(), [])
    assert generated.generator == "llm_update"
    assert generated.result.sections[Section.SESSION_TITLE] == "Long archive migration"


@pytest.mark.parametrize(
    ("numbers", "runs"),
    [
        ([], []),
        ([7], [(0, 1)]),
        ([1, 2, 3], [(0, 3)]),
        ([1, 2, 4, 5], [(0, 2), (2, 4)]),
        ([3, 5, 7], [(0, 1), (1, 2), (2, 3)]),
        ([10, 11, 13], [(0, 2), (2, 3)]),
    ],
)
def test_consecutive_runs_split_at_every_gap(
    numbers: list[int], runs: list[tuple[int, int]]
) -> None:
    assert consecutive_runs(numbers) == runs


async def test_items_cite_the_seqs_of_messages_around_a_gap() -> None:
    """A retracted message leaves a gap in the archive's seqs: what comes after it is cited by
    its own seq, never by its position."""
    messages = [
        {"role": "user", "content": "Please fix the parser in src/app/parser.py today."},
        {"role": "assistant", "content": "Looking at src/app/parser.py now."},
        {"role": "user", "content": "Traceback ends in KeyError: 'email' in src/app/models.py."},
    ]
    generated = await WorkingMemoryGenerator(None).generate(
        WorkingMemory.empty(), messages, seqs=[4, 5, 9]
    )

    cited = {
        seq
        for entries in generated.result.sources.values()
        for entry in entries
        for seq in entry.seqs
    }
    assert 9 in cited
    assert cited <= {4, 5, 9}
    files = generated.result.sources[Section.FILES]
    assert any("models.py" in entry.item and entry.seqs == (9,) for entry in files), files


async def test_seqs_must_number_every_message() -> None:
    with pytest.raises(ValueError, match="2 seqs for 1 messages"):
        await WorkingMemoryGenerator(None).generate(
            WorkingMemory.empty(), [{"role": "user", "content": "x"}], seqs=[1, 2]
        )
