"""The offline extractor on real conversations (../shared/datasets): useful, bounded, repeatable.

Each conversation is replayed as successive commits: the extractor proposes ops for the next
batch of messages, the merge applies them, and the result is the next prior, exactly as the
service does it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import pytest

from app.replay import datasets
from app.replay.formats import Conversation
from app.wm.authority import constraint_evidence
from app.wm.extractor import extract, extract_ops
from app.wm.guards import SENTINEL
from app.wm.merge import MergeResult, merge
from app.wm.messages import read_messages
from app.wm.paths import find_paths
from app.wm.prompts import DOCUMENT_TOKEN_BUDGET, SECTION_TOKEN_BUDGET
from app.wm.provenance import ItemSource, Provenance
from app.wm.reasons import Reason
from app.wm.references import SeqRange
from app.wm.schema import UPDATE_VALIDATOR
from app.wm.sections import SECTIONS, Section, empty_sections
from app.wm.thresholds import DEFAULT_CONFIG, oversized_sections
from app.wm.tokens import count_tokens, message_text
from tests.support.datasets import loaded

_ERROR_NAME = re.compile(r"\b([A-Z]\w*(?:Error|Exception))\b:")
_CODE_LISTING = re.compile(r"^\s*\d+:")
_TAU_ID = re.compile(
    r"\b(?:[a-z]+_[a-z]+_\d+|(?:credit_card|gift_card|certificate)_\d+|HAT\d{3}|"
    r"(?=[A-Z0-9]{6}\b)[A-Z]*\d[A-Z0-9]*)\b"
)


def replay(messages: list[dict[str, Any]], batch_size: int) -> Iterator[MergeResult]:
    prior = empty_sections()
    for start in range(0, len(messages), batch_size):
        arguments = extract_ops(messages[start : start + batch_size], prior)
        assert UPDATE_VALIDATOR.is_valid(arguments)
        result = merge(prior, arguments)
        yield result
        prior = dict(result.sections)


def final(messages: list[dict[str, Any]], batch_size: int) -> MergeResult:
    *_, last = replay(messages, batch_size)
    return last


def overruled(result: MergeResult) -> list[dict[str, object]]:
    plain = {Reason.ACCEPTED, Reason.NOTHING_NEW}
    return [decision.to_dict() for decision in result.decisions if decision.reason not in plain]


@cache
def swe() -> list[Conversation]:
    return loaded(datasets.swe_agent)


@cache
def tau() -> list[Conversation]:
    return loaded(datasets.tau_airline)


@cache
def locomo() -> list[Conversation]:
    return loaded(datasets.locomo)


@cache
def dialogsum() -> list[Conversation]:
    return loaded(datasets.dialogsum, limit=60)


def mentioned_paths(messages: list[dict[str, Any]]) -> set[str]:
    """Paths the user or the agent named on purpose: in their text or in tool-call arguments."""
    found: set[str] = set()
    for view in read_messages(messages):
        texts = [view.text] if view.role in ("user", "assistant") else []
        texts += [call.arguments for call in view.tool_calls]
        for text in texts:
            for path in find_paths(text.replace("\\n", "\n")):
                segments = [s for s in re.split(r"[/\\]", path) if s]
                if any(len(s) > 2 for s in segments) and "site-packages" not in path:
                    found.add(path)
    return found


def raised_errors(messages: list[dict[str, Any]]) -> set[str]:
    names: set[str] = set()
    for view in read_messages(messages):
        if view.role not in ("user", "tool"):
            continue
        for line in view.text.splitlines():
            if not _CODE_LISTING.match(line):
                names.update(_ERROR_NAME.findall(line))
    return names


def test_swe_agent_trajectories_keep_paths_and_errors() -> None:
    for conversation in swe():
        result = final(conversation.messages, batch_size=6)
        markdown = result.markdown
        missing = [p for p in mentioned_paths(conversation.messages) if p not in markdown]
        assert not missing, (conversation.name, missing)
        errors = raised_errors(conversation.messages)
        assert all(name in markdown for name in errors), (conversation.name, errors)
        assert result.sections[Section.SESSION_TITLE]
        assert result.sections[Section.FILES]


def test_swe_agent_errors_are_named() -> None:
    found = set().union(*(raised_errors(c.messages) for c in swe()))
    assert {"SyntaxError", "IndentationError"} <= found


def test_tau_bench_runs_keep_every_identifier_the_agent_used() -> None:
    # Half of the runs: every task at least once, each with its four trials.
    for conversation in tau()[:52]:
        result = final(conversation.messages, batch_size=8)
        used: set[str] = set()
        for view in read_messages(conversation.messages):
            for call in view.tool_calls:
                if call.name != "think":  # reasoning, not an action: its ids were not used
                    used.update(_TAU_ID.findall(json.dumps(json.loads(call.arguments))))
        missing = sorted(identifier for identifier in used if identifier not in result.markdown)
        assert not missing, (conversation.name, missing)


def test_tau_bench_tool_errors_are_recorded() -> None:
    checked = 0
    for conversation in tau()[:40]:
        errors = [
            view.text.strip()
            for view in read_messages(conversation.messages)
            if view.role == "tool" and view.text.startswith("Error")
        ]
        if not errors:
            continue
        checked += 1
        errors_section = final(conversation.messages, batch_size=8).sections[Section.ERRORS]
        assert all(error in errors_section for error in errors), conversation.name
    assert checked > 0


def test_twenty_merges_of_a_long_conversation_stay_within_budget() -> None:
    for conversation in locomo():
        batch_size = math.ceil(len(conversation.messages) / 20)
        merges = 0
        for result in replay(conversation.messages, batch_size):
            merges += 1
            assert not oversized_sections(result.sections, count_tokens, DEFAULT_CONFIG), (
                conversation.name,
                merges,
            )
            assert all(count <= SECTION_TOKEN_BUDGET for count in result.token_counts.values()), (
                conversation.name
            )
            assert result.total_tokens <= DOCUMENT_TOKEN_BUDGET
            assert not overruled(result), (conversation.name, merges, overruled(result))
        assert merges == 20


def test_a_long_conversation_keeps_dated_facts_about_its_speakers() -> None:
    conversation = locomo()[0]
    result = final(conversation.messages, math.ceil(len(conversation.messages) / 20))
    facts = result.sections[Section.KEY_FACTS]
    assert result.sections[Section.SESSION_TITLE] == "Conversation between Caroline and Melanie"
    assert "(said on " in facts
    assert "LGBTQ" in facts


@pytest.mark.parametrize(
    ("source", "batch_size"),
    [("swe", 6), ("tau", 8), ("locomo", 40), ("dialogsum", 4)],
)
def test_the_extractor_is_deterministic(source: str, batch_size: int) -> None:
    conversations = {"swe": swe, "tau": tau, "locomo": locomo, "dialogsum": dialogsum}[source]()
    for conversation in conversations[:3]:
        first = [r.markdown for r in replay(conversation.messages, batch_size)]
        second = [
            r.markdown for r in replay(json.loads(json.dumps(conversation.messages)), batch_size)
        ]
        assert first == second


def test_agent_runs_are_never_overruled_by_the_guards() -> None:
    for conversation in [*swe(), *tau()[:30]]:
        for result in replay(conversation.messages, batch_size=6):
            assert not overruled(result), (conversation.name, overruled(result))


def test_short_dialogues_get_a_title_a_state_and_facts() -> None:
    with_facts = 0
    for conversation in dialogsum():
        result = final(conversation.messages, batch_size=len(conversation.messages))
        assert result.sections[Section.SESSION_TITLE], conversation.name
        assert result.sections[Section.CURRENT_STATE], conversation.name
        with_facts += bool(result.sections[Section.KEY_FACTS])
        assert all(section in SECTIONS for section in result.sections)
    assert with_facts >= len(dialogsum()) * 0.9


def _cited_replay(messages: list[dict[str, Any]], batch_size: int) -> Iterator[MergeResult]:
    """``replay`` as the service runs it: numbered batches, provenance carried over."""
    prior = empty_sections()
    sources: dict[Section, tuple[ItemSource, ...]] = {}
    for start in range(0, len(messages), batch_size):
        batch = messages[start : start + batch_size]
        extraction = extract(batch, prior, first_seq=start + 1)
        result = merge(
            prior,
            extraction.ops,
            provenance=Provenance(
                SeqRange(1, start + len(batch)),
                prior=sources,
                cited=extraction.cited,
                evidence=constraint_evidence(batch, start + 1),
            ),
        )
        yield result
        prior, sources = dict(result.sections), dict(result.sources)


@pytest.mark.parametrize("load", [swe, tau, locomo], ids=["swe-agent", "tau-bench", "locomo"])
def test_every_item_the_extractor_writes_names_messages_that_hold_it(
    load: Callable[[], list[Conversation]],
) -> None:
    """Every item but the guard's own lines has sources; the sources of a path, an error line
    or a constraint include a message that holds it; nothing the extractor takes from a user is
    ever called unsourced."""
    for conversation in load()[:6]:
        messages = conversation.messages
        texts = [message_text(message).lower() for message in messages]
        for result in _cited_replay(messages, batch_size=20):
            assert all(d.reason is not Reason.UNSOURCED_CONSTRAINT for d in result.decisions)
            for section in SECTIONS:
                for entry in result.sources[section]:
                    if SENTINEL in entry.item:
                        continue
                    assert entry.seqs, (conversation.name, section, entry.item)
                    for path in find_paths(entry.item) if section is Section.FILES else []:
                        assert any(path.lower() in texts[seq - 1] for seq in entry.seqs), path
