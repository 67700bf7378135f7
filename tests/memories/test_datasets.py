"""Long-term memory on replayed LoCoMo conversations: what is kept, where it came from, whether a
paraphrase finds it, and what a restatement or a change of mind does.

Each conversation is replayed through the API (speaker A is the user), committing every 40
messages; the checks use the dataset's own observations and questions as paraphrase queries.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from app.db import Database
from app.memories.text import content_words
from tests.conftest import TenantKeys, make_tenant
from tests.context.helpers import replay
from tests.memories.helpers import events, memories, new_session, search, state
from tests.memories.locomo import Conversation, load
from tests.support.api import commit

CONVERSATIONS = ("26", "30", "41")
EVERY = 40
SHARED_WORDS = 2


@dataclass
class Replayed:
    conversation: Conversation
    keys: TenantKeys
    agent_session_id: str
    memories: list[dict[str, Any]]
    text_of: dict[int, str]


@pytest.fixture(scope="module")
async def replayed(client: httpx.AsyncClient, database: Database) -> list[Replayed]:
    done: list[Replayed] = []
    for name in CONVERSATIONS:
        conversation = load(name)
        keys = await make_tenant(database, f"locomo-{name}")
        agent_session_id = await new_session(client, keys, conversation.user)
        await replay(client, keys, agent_session_id, conversation.messages, every=EVERY)
        # The last, shorter batch too: every message is archived before the checks.
        rest = await commit(client, keys, agent_session_id, keep_recent_count=0, wait=True)
        assert rest.json()["status"] in ("done", "skipped"), rest.text
        stored = await memories(client, keys.reader, limit=200, include_superseded="true")
        text_of = {
            seq: str(message["content"])
            for seq, message in enumerate(conversation.messages, start=1)
        }
        done.append(Replayed(conversation, keys, agent_session_id, stored, text_of))
    return done


async def test_memories_by_category_and_by_event(
    client: httpx.AsyncClient, replayed: list[Replayed]
) -> None:
    categories: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for run in replayed:
        assert len(run.memories) < 200, "the listing page must hold every memory"
        categories.update(memory["category"] for memory in run.memories)
        for memory in run.memories:
            kinds.update(e["event"] for e in await events(client, run.keys.reader, memory["id"]))
    assert {"preference", "profile", "event"} <= set(categories), categories
    assert kinds["ADD"] + kinds["SUPERSEDE"] >= sum(categories.values()), kinds
    assert "DELETE" not in kinds


async def test_no_memory_quotes_a_message_that_does_not_exist(replayed: list[Replayed]) -> None:
    """Every source seq is a user message of the replay, and that message holds every content
    word of the memory (the rules only keep the speaker's own sentences)."""
    for run in replayed:
        for memory in run.memories:
            assert memory["source_seqs"], memory
            for seq in memory["source_seqs"]:
                assert seq in run.text_of, (run.conversation.name, memory)
                message = run.conversation.messages[seq - 1]
                assert message["role"] == "user"
                assert message["name"] == run.conversation.user
                words = set(content_words(memory["content"].rstrip("…")))
                missing = words - set(content_words(run.text_of[seq]))
                assert not missing, (memory["content"], run.text_of[seq], missing)


async def test_archives_report_what_they_extracted(
    client: httpx.AsyncClient, replayed: list[Replayed]
) -> None:
    for run in replayed:
        response = await client.get(
            f"/v1/sessions/{run.agent_session_id}/archives",
            params={"limit": 200},
            headers=run.keys.read,
        )
        reports = [archive["memories"] for archive in response.json()["items"]]
        assert all(report is not None and report["failed"] is None for report in reports)
        changed = sum(r["added"] + r["updated"] + r["superseded"] for r in reports)
        assert changed >= len(run.memories)
        skipped: Counter[str] = Counter()
        for report in reports:
            skipped.update(report["skipped"])
        assert {"chit_chat", "question", "no_durable_fact"} <= set(skipped), skipped


async def test_preference_and_profile_facts_are_found_by_a_paraphrase(
    client: httpx.AsyncClient, replayed: list[Replayed]
) -> None:
    """The dataset's own observations and questions about the user paraphrase the turns they
    cite. Where such a turn produced a preference or profile memory and the paraphrase shares at
    least two content words with it (the hashing embedder sees words, not meaning), searching
    with the paraphrase at the default ``min_score`` finds that memory among the first five."""
    asked = found = 0
    for run in replayed:
        by_seq: dict[int, list[dict[str, Any]]] = {}
        for memory in run.memories:
            if memory["category"] in ("preference", "profile") and memory["superseded_by"] is None:
                for seq in memory["source_seqs"]:
                    by_seq.setdefault(seq, []).append(memory)
        for paraphrase in [*run.conversation.observations, *run.conversation.questions]:
            words = set(content_words(paraphrase.text))
            wanted = {
                memory["id"]
                for seq in paraphrase.seqs
                for memory in by_seq.get(seq, [])
                if len(words & set(content_words(memory["content"]))) >= SHARED_WORDS
            }
            if not wanted:
                continue
            hits = await search(
                client, run.keys.reader, paraphrase.text, user_id=run.conversation.user, limit=5
            )
            asked += 1
            found += bool(wanted & {hit["id"] for hit in hits})
    assert asked >= 12, asked
    assert found / asked >= 0.9, (found, asked)


def like_object(content: str) -> str | None:
    match = re.search(r"\bI (?:really |just |also |so )*(?:love|like|enjoy) ([^.!?,;]+)", content)
    return None if match is None else match.group(1).strip()


async def test_a_restated_preference_updates_and_a_changed_one_supersedes(
    client: httpx.AsyncClient, replayed: list[Replayed]
) -> None:
    run = replayed[0]
    preference = next(
        m
        for m in run.memories
        if m["category"] == "preference"
        and m["superseded_by"] is None
        and m["slot"]
        and like_object(m["content"])
    )
    source = run.text_of[preference["source_seqs"][0]]
    before = len(await memories(client, run.keys.reader, limit=200, include_superseded="true"))

    restated = await state(client, run.keys, run.agent_session_id, source)
    assert restated["memories"]["updated"] >= 1
    after = await memories(client, run.keys.reader, limit=200, include_superseded="true")
    assert len(after) == before, "a restatement must not add a second row"
    trail = await events(client, run.keys.reader, preference["id"])
    assert trail[-1]["event"] == "UPDATE"
    assert trail[-1]["archive_seq"] == restated["archive_seq"]

    thing = like_object(preference["content"])
    changed = await state(
        client, run.keys, run.agent_session_id, f"Honestly, I don't like {thing} anymore."
    )
    assert changed["memories"]["superseded"] == 1
    rows = {
        m["id"]: m
        for m in await memories(client, run.keys.reader, limit=200, include_superseded="true")
    }
    old = rows[preference["id"]]
    assert old["superseded_by"] is not None, "the old row is kept, marked superseded"
    new = rows[old["superseded_by"]]
    assert new["content"] == f"I don't like {thing} anymore."
    [supersede] = await events(client, run.keys.reader, new["id"])
    assert (supersede["event"], supersede["related_memory_id"]) == ("SUPERSEDE", old["id"])
    assert preference["id"] not in {
        hit["id"] for hit in await search(client, run.keys.reader, thing or "", limit=50)
    }


async def test_no_two_current_memories_of_a_user_contradict_on_one_attribute(
    replayed: list[Replayed],
) -> None:
    """Over every replayed conversation: an attribute (a slot: a preference for or between
    things, a home, a job, a pet, …) has one current value per user; the others are
    superseded and point at what replaced them."""
    slotted = 0
    for run in replayed:
        values: dict[tuple[str, str], set[str]] = {}
        for memory in run.memories:
            if memory["slot"] is None or memory["superseded_by"] is not None:
                continue
            values.setdefault((memory["category"], memory["slot"]), set()).add(
                str(memory["slot_value"])
            )
            slotted += 1
        contradictions = {slot: found for slot, found in values.items() if len(found) > 1}
        assert contradictions == {}, run.conversation.name
        ids = {memory["id"] for memory in run.memories}
        for memory in run.memories:
            if memory["superseded_by"] is not None:
                assert memory["superseded_by"] in ids
    assert slotted >= 10, "the conversations state attributes"
