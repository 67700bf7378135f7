"""Replay and the evaluation through the app: the schedule, what a replay reports, one
conversation evaluated with the offline extractor, and one with the adversarial model."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from app.db import Database
from app.replay.datasets import tau_airline_shift
from app.replay.evaluation import EvalOptions, evaluate
from app.replay.formats import Conversation, ReplayFormat
from app.replay.run import ReplayError, Schedule, by_section, replay, section_history
from app.wm.items import Marker, is_kept, markers_of
from app.wm.sections import Section
from tests.conftest import AppFactory, make_tenant
from tests.support.adversary import ATTACK_NAMES, INVENTED, Adversary
from tests.support.datasets import loaded
from tests.support.fake_openai import FakeOpenAI


def chat(count: int) -> Conversation:
    messages: list[dict[str, Any]] = []
    for n in range(count // 2):
        messages.append({"role": "user", "content": f"Please check app/module_{n}.py for bug {n}."})
        messages.append({"role": "assistant", "content": f"Checked app/module_{n}.py: fixed."})
    return Conversation("synthetic", ReplayFormat.OPENAI, messages)


async def test_a_replay_commits_on_schedule_and_reports_each_archive(
    writer: httpx.AsyncClient,
) -> None:
    http = writer
    replayed = await replay(http, chat(50), Schedule(every=20, keep=4))
    assert [(a.archive_seq, a.start_seq, a.end_seq) for a in replayed.archives] == [
        (1, 1, 16),
        (2, 17, 36),
        (3, 37, 46),
    ], "every 20 messages keeping 4, then once more after the last message"
    assert all(a.status == "done" and a.generator == "offline" for a in replayed.archives)
    assert all(len(a.decisions) == 7 for a in replayed.archives)
    assert replayed.working_memory is not None
    assert replayed.working_memory["archive_seq"] == 3
    assert "app/module_0.py" in replayed.working_memory["markdown"]
    versions = await section_history(http, replayed.agent_session_id)
    assert len(versions) == 21
    assert [seq for seq, _ in by_section(versions)["Files & Context"]] == [1, 2, 3]

    no_final = await replay(http, chat(50), Schedule(every=20, keep=4, final_commit=False))
    assert len(no_final.archives) == 2


async def test_a_pending_tokens_threshold_commits_sooner(writer: httpx.AsyncClient) -> None:
    http = writer
    by_count = await replay(http, chat(60), Schedule(every=100, keep=4, final_commit=False))
    assert by_count.archives == []
    by_tokens = await replay(
        http, chat(60), Schedule(every=100, pending_tokens=100, keep=4, final_commit=False)
    )
    assert len(by_tokens.archives) >= 3
    assert all(a.end_seq - a.start_seq < 30 for a in by_tokens.archives)


async def test_a_refused_request_is_a_replay_error(writer: httpx.AsyncClient) -> None:
    http = writer
    bad = Conversation("bad", ReplayFormat.OPENAI, [{"role": "robot", "content": "beep"}])
    with pytest.raises(ReplayError, match=r"appending messages 1-1 answered 422"):
        await replay(http, bad, Schedule())
    await replay(http, chat(2), Schedule(), external_id="taken")
    with pytest.raises(ReplayError, match="creating the agent session answered 409"):
        await replay(http, chat(2), Schedule(), external_id="taken")


async def test_one_conversation_evaluated_with_the_offline_extractor(
    writer: httpx.AsyncClient,
) -> None:
    conversation = loaded(tau_airline_shift, None, 4)
    result = await evaluate(writer, conversation, "tau-bench", EvalOptions())
    assert result.archives >= 3
    assert result.generators == {"offline": result.archives}
    assert result.reproduced is True, "the same input gives the same working memory"
    assert result.losses == []
    assert result.anchors > 10
    for budget, modes in result.scores.items():
        assert set(modes) == {"truncation", "default", "filled"}
        for scored in modes.values():
            assert scored.tokens <= budget
        filled, truncated = modes["filled"].share, modes["truncation"].share
        assert filled is not None
        assert truncated is not None
        # Never below truncation: the filled context holds truncation's newest messages raw and
        # what its summary displaced of them in brief (it may hold less of the working memory
        # than the default context, whose summary makes no room for that brief).
        assert filled >= truncated
    assert result.wm_tokens == sum(result.wm_section_tokens.values()) or result.wm_tokens > 0
    assert result.default_context_share < 1
    again = await evaluate(writer, conversation, "tau-bench", EvalOptions())
    assert again.determinism_hash == result.determinism_hash


async def test_the_adversarial_model_removes_only_issues_it_dropped_twice(
    own_database: Database, app_client: AppFactory
) -> None:
    """Guard F gives a dropped open issue one second chance (DESIGN 3.5 F): the only items an
    adversary takes out of a guarded section are open issues it dropped after their restore."""
    conversation = loaded(tau_airline_shift, None, 10)
    keys = await make_tenant(own_database)
    adversary = Adversary()
    with FakeOpenAI(default_reply=adversary.reply) as server:
        async with app_client(
            own_database,
            llm_provider="openai",
            llm_base_url=server.base_url,
            llm_api_key=SecretStr("adversary"),
            llm_max_retries=0,
        ) as http:
            http.headers.update(keys.write)  # this test's own app and client
            result = await evaluate(http, conversation, "tau-bench", EvalOptions(budgets=(4_000,)))
            versions = await section_history(http, result.agent_session_id)
    assert server.errors == []
    assert adversary.attacks >= 3
    assert result.reproduced is None
    assert {"llm_update", "llm_create"} <= set(result.generators)
    assert set(result.generators) & {"llm_recovered", "llm_create_fallback"}
    issues = by_section(versions)[Section.OPEN_ISSUES.value]
    for loss in result.losses:
        assert loss.section is Section.OPEN_ISSUES, loss
        restored_before = [
            body
            for seq, body in issues
            if loss.entered <= seq < loss.lost
            and any(
                Marker.RESTORED in markers_of(line) and is_kept(loss.item, line.lower())
                for line in body.splitlines()
            )
        ]
        assert restored_before, f"{loss.item!r} left without its second chance"


async def test_the_adversarys_invented_constraint_is_stored_marked_and_never_protected(
    own_database: Database, app_client: AppFactory
) -> None:
    """The ``invent constraint`` attack first: a Task & Goals constraint no user gave, cited to
    an assistant message, is marked ``[tool-sourced]`` (``tool_sourced_instruction``: an
    assistant's message is no instruction) and is not a protected item, so no guard keeps it and no loss is counted when it goes."""
    conversation = loaded(tau_airline_shift, None, 10)
    keys = await make_tenant(own_database)
    adversary = Adversary(first_attack=ATTACK_NAMES.index("invent constraint"))
    with FakeOpenAI(default_reply=adversary.reply) as server:
        async with app_client(
            own_database,
            llm_provider="openai",
            llm_base_url=server.base_url,
            llm_api_key=SecretStr("adversary"),
            llm_max_retries=0,
        ) as http:
            http.headers.update(keys.write)
            result = await evaluate(http, conversation, "tau-bench", EvalOptions(budgets=(4_000,)))
            versions = await section_history(http, result.agent_session_id)
    assert server.errors == []
    assert adversary.invented == 1
    assert result.interventions["tool_sourced_instruction"] == 1
    task = by_section(versions)[Section.TASK_AND_GOALS.value]
    planted = [body for _, body in task if INVENTED in body]
    assert planted, "the attack never reached the stored section"
    assert all(f"[tool-sourced] {INVENTED}" in body for body in planted)
    assert not any(INVENTED in loss.item for loss in result.losses)
