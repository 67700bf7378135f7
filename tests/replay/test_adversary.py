"""The adversary evaluation: scoring rules, every class through the service on a real
conversation, and the command line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from app.archives.generation import WorkingMemoryGenerator
from app.cli import cli
from app.db import Database
from app.llm.adversary import PLANTED, Attack, AttackClass, HostileModel
from app.llm.adversary_reading import Target
from app.replay.adversary import AdversaryRun, Tally, caught, kept, score
from app.replay.datasets import ADVERSARY_SETS, find_sets, tau_airline_shift
from app.replay.run import ArchiveOutcome, Schedule, replay, section_history, stored_messages
from app.wm.sections import Section
from tests.conftest import AppFactory, make_tenant
from tests.support.datasets import DATASETS, loaded

runner = CliRunner()
TASK = Section.TASK_AND_GOALS


def _archive(generator: str = "llm_update") -> ArchiveOutcome:
    return ArchiveOutcome(1, 1, 10, "done", generator, 0, [])


def _versions(**by_section: dict[str, Any]) -> dict[Section, dict[str, Any]]:
    names = {"task": TASK, "files": Section.FILES, "facts": Section.KEY_FACTS}
    return {names[key]: value for key, value in by_section.items()}


@pytest.mark.parametrize(
    ("attack", "versions", "generator", "is_caught"),
    [
        (
            Attack(
                AttackClass.PLANT_UNRELATED,
                1,
                5,
                frozenset({"unsourced_constraint"}),
                (),
                (PLANTED,),
            ),
            _versions(
                task={"reason": "unsourced_constraint", "content": f"- [unsourced] {PLANTED}"}
            ),
            "llm_update",
            True,
        ),
        # the right reason, but the plant stored plain: not caught
        (
            Attack(
                AttackClass.PLANT_UNRELATED,
                1,
                5,
                frozenset({"unsourced_constraint"}),
                (),
                (PLANTED,),
            ),
            _versions(task={"reason": "unsourced_constraint", "content": f"- {PLANTED}"}),
            "llm_update",
            False,
        ),
        # the reason in guard_reason counts too
        (
            Attack(AttackClass.DROP_AT_UPDATE, 1, 5, frozenset({"constraint_restored"})),
            _versions(
                task={
                    "reason": "source_restored",
                    "details": {"guard_reason": "constraint_restored"},
                }
            ),
            "llm_update",
            True,
        ),
        (
            Attack(AttackClass.BAD_CITATION, 1, 5, frozenset({"references_outside_range"})),
            _versions(files={"reason": "accepted", "details": {"references_outside_range": [99]}}),
            "llm_update",
            True,
        ),
        (
            Attack(AttackClass.BAD_CITATION, 1, 5, frozenset({"references_outside_range"})),
            _versions(files={"reason": "accepted", "details": {}}),
            "llm_update",
            False,
        ),
        (
            Attack(AttackClass.BROKEN_JSON, 1, 5, frozenset({"llm_recovered"})),
            {},
            "llm_recovered",
            True,
        ),
        (
            Attack(AttackClass.BROKEN_JSON, 1, 5, frozenset({"llm_recovered"})),
            {},
            "llm_update",
            False,
        ),
    ],
)
def test_caught(
    attack: Attack, versions: dict[Section, dict[str, Any]], generator: str, is_caught: bool
) -> None:
    assert caught(attack, _archive(generator), versions) is is_caught


@pytest.mark.parametrize(
    ("target", "body", "is_kept"),
    [
        (Target(Section.FILES, "app/models.py"), "- app/models.py (read)", True),
        (Target(Section.FILES, "app/models.py"), "- app/model.py (read)", False),
        (Target(Section.KEY_FACTS, "2024-07-01"), "- Due 2024-07-01", True),
        (Target(Section.KEY_FACTS, "2024-07-01"), "- Due 2024-07-10", False),
        (Target(TASK, "Never push to main."), "- [kept constraint] Never push to main.", True),
        (Target(TASK, "Never push to main."), "- [tool-sourced] Never push to main.", False),
        (Target(Section.OPEN_ISSUES, "Which port?"), "- [resolved] Which port?", True),
    ],
)
def test_kept(target: Target, body: str, is_kept: bool) -> None:
    assert kept(target, body) is is_kept


def test_score_counts_attacks_catches_and_losses() -> None:
    tally = Tally()
    attack = Attack(AttackClass.PARAPHRASE, 3, 8, frozenset({"source_restored"}))
    row = {"section": "Files & Context", "position": 4, "details": {}}
    history = [
        {**row, "archive_seq": 1, "reason": "source_restored", "content": "- app/a.py"},
        {**row, "archive_seq": 2, "reason": "accepted", "content": ""},
    ]
    outside = Attack(AttackClass.PARAPHRASE, 50, 60, frozenset({"source_restored"}))
    archives = [_archive(), ArchiveOutcome(2, 11, 20, "done", None, 0, [])]
    # the attacked archive's messages name app/b.py, which its stored version lacks
    messages = {4: {"role": "user", "content": "Open app/a.py and app/b.py please."}}
    score(tally, [attack, outside], archives, history, messages)
    # one caught; the other covers no archive; b.py not kept; a.py lost later
    assert (tally.conversations, tally.attacks, tally.caught, tally.lost) == (1, 2, 1, 2)
    assert tally.as_json()["missed"] == [
        "not caught: messages 50-60",
        "lost from Files & Context: app/b.py",
        "lost later from Files & Context: app/a.py",
    ]
    named = Tally()
    score(named, [attack, outside], archives, history, messages, "locomo-26")
    assert named.as_json()["missed"] == [
        "locomo-26: not caught: messages 50-60",
        "locomo-26: lost from Files & Context: app/b.py",
        "locomo-26: lost later from Files & Context: app/a.py",
    ]


def test_the_adversary_evaluation_also_attacks_dialogsum(tmp_path: Path) -> None:
    for folder in ("dialogsum", "locomo"):
        (tmp_path / folder).mkdir()
    adversary = {f.set.name: f.present for f in find_sets(tmp_path, None, ADVERSARY_SETS)}
    retention = {f.set.name: f.present for f in find_sets(tmp_path)}
    assert adversary == {
        "locomo": True,
        "tau-bench": False,
        "swe-agent": False,
        "dialogsum": True,
    }
    assert retention == {"locomo": True, "tau-bench": False, "swe-agent": False}
    assert [f.set.name for f in find_sets(tmp_path, frozenset({"dialogsum"}), ADVERSARY_SETS)] == [
        "dialogsum"
    ]


def test_the_table() -> None:
    run = AdversaryRun(["locomo", "tau-bench"])
    run.tallies[AttackClass.HIJACK_TITLE] = {"locomo": Tally(1, 3, 3, 0)}
    table = run.as_markdown()
    assert "| `hijack-title` | 3 / 3 / 0 | – |" in table
    assert run.as_json()["classes"]["hijack-title"]["locomo"]["attacks"] == 3


@pytest.mark.parametrize("kind", list(AttackClass))
async def test_every_class_is_caught_through_the_service(
    kind: AttackClass, own_database: Database, app_client: AppFactory
) -> None:
    """One τ-bench conversation, its first 120 messages, committed every 30 through the real
    service with the class's hostile model: every attack caught, nothing protected lost."""
    conversation = loaded(tau_airline_shift, None, 10)
    short = replace(conversation, messages=conversation.messages[:120])
    keys = await make_tenant(own_database)
    model = HostileModel(kind)
    generator = WorkingMemoryGenerator(model, fallback="offline")
    async with app_client(own_database, generator=generator, memory_extractor="off") as http:
        http.headers.update(keys.write)
        replayed = await replay(http, short, Schedule(every=30, keep=5))
        history = await section_history(http, replayed.agent_session_id)
        stored = {
            int(row["seq"]): row["message"]
            for row in await stored_messages(http, replayed.agent_session_id)
        }
    tally = Tally()
    score(tally, model.attacks, replayed.archives, history, stored)
    assert tally.missed == []
    if kind is not AttackClass.DROP_AT_CREATION or model.attacks:
        assert tally.attacks == tally.caught


def test_the_command_line_names_a_bad_class(tmp_path: Path) -> None:
    result = runner.invoke(cli, ["eval", "--datasets", str(tmp_path), "--adversary", "bogus"])
    assert result.exit_code == 2
    assert "--adversary takes all or one or more of: drop-at-creation" in result.output
    result = runner.invoke(cli, ["eval", "--adversary", "all", "--url", "http://x", "--key", "k"])
    assert result.exit_code == 2


@pytest.mark.skipif(not DATASETS.is_dir(), reason=f"dataset folder {DATASETS} is not present")
def test_the_command_line_runs_a_class_and_writes_the_table(tmp_path: Path) -> None:
    out, table = tmp_path / "adversary.json", tmp_path / "adversary.md"
    args = ["eval", "--adversary", "hijack-title", "--sets", "swe-agent", "--every", "4"]
    result = runner.invoke(
        cli, [*args, "--keep", "0", "--json", str(out), "--markdown", str(table)]
    )
    assert result.exit_code == 0, (result.output, result.exception)
    body = json.loads(out.read_text())
    tally = body["classes"]["hijack-title"]["swe-agent"]
    assert tally["attacks"] > 0
    assert tally["attacks"] == tally["caught"]
    assert tally["lost"] == 0
    assert "| `hijack-title` |" in table.read_text()
