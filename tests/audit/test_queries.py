"""Every query of docs/audit.md, read from the document and run as an auditor on fixture data
built by real commits (tests/audit/fixtures.py); each result is checked."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row

from tests.audit.documented import documented_queries, for_driver, variables
from tests.audit.fixtures import AuditData

TESTED = {
    "section_evolution",
    "guard_interventions",
    "open_issues_restored",
    "text_presence",
    "daily_archives",
    "sections_at_threshold",
    "archive_decisions",
    "restored_items",
    "restores",  # run in tests/archives/test_restore.py, on agent sessions restored there
    "context_sections",  # run in tests/ledger/test_views.py, on recorded contexts
    "contexts_using_message",  # likewise
    "forks_sharing",  # run in tests/archives/test_fork.py, on agent sessions forked there
    "archive_actions",  # run in tests/archives/test_archive_actions.py, on actions taken there
}


def run(url: str, name: str, **params: object) -> list[dict[str, Any]]:
    sql = documented_queries()[name]
    assert variables(sql) == set(params), f"{name} takes {sorted(variables(sql))}"
    with psycopg.connect(url, row_factory=dict_row) as connection:
        return connection.execute(for_driver(sql).encode(), params).fetchall()


def pick(rows: list[dict[str, Any]], *columns: str) -> list[tuple[Any, ...]]:
    return [tuple(row[column] for column in columns) for row in rows]


def test_every_documented_query_is_tested() -> None:
    assert set(documented_queries()) == TESTED


def test_1_how_one_section_evolved(auditor_url: str, audit_data: AuditData) -> None:
    rows = run(
        auditor_url, "section_evolution", agent_session_id=audit_data.billing, section="Open Issues"
    )
    assert pick(rows, "archive_seq", "op_applied", "reason", "item_count", "item_delta") == [
        (1, "UPDATE", "accepted", 2, None),
        (2, "UPDATE", "open_issues_restored", 2, 0),
        (3, "UPDATE", "accepted", 1, -1),
    ]
    assert [row["changed"] for row in rows] == [True, True, True]
    assert "[silently dropped, restored] Who owns the on-call rota?" in rows[1]["content"]
    files = run(
        auditor_url,
        "section_evolution",
        agent_session_id=audit_data.billing,
        section="Files & Context",
    )
    assert pick(files, "archive_seq", "op_requested", "op_applied", "reason", "changed") == [
        (1, "UPDATE", "UPDATE", "accepted", True),
        (2, "UPDATE", "KEEP", "files_path_regression", False),
        (3, "UPDATE", "UPDATE", "accepted", True),
    ]


def test_2_guard_interventions_in_a_window(auditor_url: str) -> None:
    now = datetime.now(UTC)
    window = {"from": now - timedelta(hours=1), "to": now + timedelta(hours=1)}
    rows = run(auditor_url, "guard_interventions", **window)
    assert pick(rows, "guard", "reason", "interventions", "agent_sessions") == [
        ("no_silent_drop", "open_issues_restored", 3, 2),
        ("consolidation_anti_bloat", "key_facts_ratio", 2, 2),
        ("append_only", "errors_append_only", 1, 1),
        ("consolidation_anti_bloat", "key_facts_anchor_coverage", 1, 1),
        ("constraint_retention", "constraint_restored", 1, 1),
        ("no_path_regression", "files_path_regression", 1, 1),
        ("title_stability", "title_no_overlap", 1, 1),
    ]
    before = {"from": now - timedelta(days=2), "to": now - timedelta(days=1)}
    assert run(auditor_url, "guard_interventions", **before) == []


def test_3_agent_sessions_with_open_issues_restored_more_than_n_times(
    auditor_url: str, audit_data: AuditData
) -> None:
    rows = run(auditor_url, "open_issues_restored", n=1)
    assert pick(rows, "agent_session_id", "items_restored", "archives", "last_archive_seq") == [
        (audit_data.support_uuid, 2, 2, 4)
    ]
    assert [row["items_restored"] for row in run(auditor_url, "open_issues_restored", n=0)] == [
        2,
        1,
    ]
    assert run(auditor_url, "open_issues_restored", n=2) == []


def test_4_when_a_text_entered_and_left_a_section(auditor_url: str, audit_data: AuditData) -> None:
    def spans(agent_session_id: str, text: str) -> list[tuple[Any, ...]]:
        rows = run(auditor_url, "text_presence", agent_session_id=agent_session_id, text=text)
        return pick(rows, "section", "entered_archive_seq", "left_archive_seq")

    assert spans(audit_data.billing, "on-call rota") == [("Open Issues", 1, 3)]
    assert spans(audit_data.billing, "ON-CALL Rota") == [("Open Issues", 1, 3)]
    assert spans(audit_data.billing, "app/billing/webhooks.py") == [("Files & Context", 3, None)]
    assert spans(audit_data.billing, "Weekend plans") == [], "the rejected title never entered"
    assert spans(audit_data.billing, "Never deploy on Fridays") == [("Task & Goals", 1, None)]
    assert spans(audit_data.billing, "") == []
    # The other tenant's agent session holds the same text; the auditor cannot see it.
    assert spans(audit_data.other_session, "on-call rota") == []


def test_5_archives_per_tenant_per_day(
    auditor_url: str, audit_data: AuditData, archives: Mapping[str, list[dict[str, Any]]]
) -> None:
    today = datetime.now(UTC).date()
    rows = run(auditor_url, "daily_archives", from_day=today - timedelta(days=1), to_day=today)
    assert {row["tenant_id"] for row in rows} == {audit_data.tenant.tenant_id}
    done = [a for found in archives.values() for a in found if a["status"] == "done"]

    def total(column: str) -> int:
        return sum(int(row[column]) for row in rows)

    assert (total("archives_done"), total("archives_failed")) == (6, 1)
    assert total("message_tokens_in") == sum(a["archived_tokens"] for a in done) > 0
    assert total("wm_tokens_out") == sum(a["wm_tokens"] for a in done) > 0
    # Six successful model calls, each billed as the scripted 100 tokens in and 20 out.
    assert (total("model_prompt_tokens"), total("model_completion_tokens")) == (600, 120)
    mix: dict[str, int] = {}
    for row in rows:
        for generator, count in row["generator_mix"].items():
            mix[generator] = mix.get(generator, 0) + count
    assert mix == {"llm_create": 2, "llm_update": 3, "llm_recovered": 1}
    assert (
        run(
            auditor_url,
            "daily_archives",
            from_day=today - timedelta(days=9),
            to_day=today - timedelta(days=8),
        )
        == []
    )


def test_6_sections_at_or_above_their_thresholds(auditor_url: str, audit_data: AuditData) -> None:
    def at(max_items: int, max_tokens: int = 1500) -> list[tuple[Any, ...]]:
        rows = run(auditor_url, "sections_at_threshold", max_items=max_items, max_tokens=max_tokens)
        return pick(rows, "agent_session_id", "archive_seq", "section", "item_count", "state")

    key_facts = (audit_data.support_uuid, 4, "Key Facts & Decisions", 32)
    assert at(25) == [(*key_facts, "oversized")]
    assert at(32) == [(*key_facts, "at threshold")]
    assert at(33) == []
    assert at(15) == [(*key_facts, "emergency")]
    assert at(10_000, max_tokens=478) == [(*key_facts, "at threshold")]


def test_what_the_guards_did_in_one_archive(auditor_url: str, audit_data: AuditData) -> None:
    rows = run(auditor_url, "archive_decisions", agent_session_id=audit_data.billing, archive_seq=2)
    assert pick(rows, "section", "op_applied", "reason") == [
        ("Session Title", "KEEP", "title_no_overlap"),
        ("Current State", "UPDATE", "accepted"),
        ("Task & Goals", "UPDATE", "constraint_restored"),
        ("Key Facts & Decisions", "APPEND", "key_facts_ratio"),
        ("Files & Context", "KEEP", "files_path_regression"),
        ("Errors & Corrections", "APPEND", "errors_append_only"),
        ("Open Issues", "UPDATE", "open_issues_restored"),
    ]
    assert rows[4]["details"]["lost_paths"] == ["app/billing/models.py"]


def test_every_line_the_guards_put_back(auditor_url: str, audit_data: AuditData) -> None:
    rows = run(auditor_url, "restored_items", agent_session_id=audit_data.support)
    assert pick(rows, "archive_seq", "section", "item") == [
        (2, "Open Issues", "[silently dropped, restored] Does the refund cover shipping?"),
        (4, "Open Issues", "[silently dropped, restored] Which currency for EU customers?"),
    ]
