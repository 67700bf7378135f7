"""The offline extractor's rules on small, hand-written conversations (DESIGN 4.1)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.wm.extractor import (
    DIGEST_PREFIX,
    ExtractorConfig,
    clip,
    extract_ops,
    sentences,
)
from app.wm.guards import SENTINEL
from app.wm.items import split_items
from app.wm.merge import merge
from app.wm.reasons import Reason
from app.wm.schema import UPDATE_VALIDATOR
from app.wm.sections import Section
from tests.wm.helpers import bullets, words

Message = dict[str, Any]


def user(text: str, name: str | None = None) -> Message:
    message: Message = {"role": "user", "content": text}
    if name:
        message["name"] = name
    return message


def assistant(text: str, name: str | None = None) -> Message:
    message: Message = {"role": "assistant", "content": text}
    if name:
        message["name"] = name
    return message


def call(call_id: str, name: str, arguments: object, text: str | None = None) -> Message:
    encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "role": "assistant",
        "content": text,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": encoded}}
        ],
    }


def result(call_id: str, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def ops(
    messages: list[Message], prior: dict[Section, str] | None = None, **kw: Any
) -> dict[str, Any]:
    arguments = extract_ops(messages, prior, counter=words, **kw)
    assert UPDATE_VALIDATOR.is_valid(arguments)
    sections = arguments["sections"]
    assert isinstance(sections, dict)
    return sections


def test_no_messages_keep_everything() -> None:
    assert all(op == {"op": "KEEP"} for op in ops([]).values())


@pytest.mark.parametrize(
    ("messages", "title"),
    [
        ([user("ISSUE:\n## TimeDelta rounding **\nmore")], "TimeDelta rounding"),
        ([user("Hi! Hello there. Book a flight to Paris on Monday.")], "Book a flight to Paris on Monday"),
        ([user("Hey Mel!", "Caroline"), assistant("Hi Caroline, how are you?", "Melanie")],
         "Conversation between Caroline and Melanie"),
        ([assistant("Welcome to the help desk, ask away.")], "Welcome to the help desk, ask away"),
        ([user("ok"), user("Thanks!")], None),
        ([{"role": "system", "content": "You are helpful and kind to everyone."}], None),
    ],
)  # fmt: skip
def test_session_title(messages: list[Message], title: str | None) -> None:
    op = ops(messages)["Session Title"]
    assert op == ({"op": "UPDATE", "content": title} if title else {"op": "KEEP"})


def test_an_existing_title_is_kept() -> None:
    assert ops([user("Book a flight to Paris")], {Section.SESSION_TITLE: "Trip"})[
        "Session Title"
    ] == {"op": "KEEP"}


def test_current_state_has_the_latest_request_reply_tool_call_and_date() -> None:
    messages = [
        {"role": "system", "content": "Session 2 began at 1:56 pm on 8 May, 2023."},
        user("Please open the config file."),
        call("c1", "open", {"path": "app/config.py"}),
        result("c1", "1: import os\n2: x = 1"),
        call("c2", "think", {"thought": "hmm"}),
        assistant("Opened it."),
    ]
    content = ops(messages)["Current State"]["content"]
    assert content.splitlines() == [
        "Latest session date: 8 May 2023.",
        "Latest from User: Please open the config file.",
        "Latest from Assistant: Opened it.",
        "Last tool call: `open`(path app/config.py) returned: 1: import os",
    ]


def test_a_tool_call_without_result_is_still_reported() -> None:
    content = ops([call("c1", "run", "ls -la")])["Current State"]["content"]
    assert content == "Last tool call: `run`(ls -la)"


def test_task_goals_take_goal_constraints_and_requests() -> None:
    messages = [
        user(
            "I need to change my return flight to Newark. Never book basic economy. "
            "I don't want insurance. I must have left it at home. Can you help? "
            "Could you please check the options for tomorrow morning? Please go ahead."
        )
    ]
    items = ops(messages)["Task & Goals"]["items"]
    assert items == [
        "Goal: I need to change my return flight to Newark",
        "Never book basic economy.",
        "I don't want insurance.",
        "Could you please check the options for tomorrow morning?",
    ]


def test_task_goals_in_a_chat_take_only_constraints() -> None:
    messages = [
        user("I want to paint more this year. Please never call me after 9 pm.", "Ann"),
        assistant("Sure thing, Ann.", "Bob"),
    ]
    assert ops(messages)["Task & Goals"]["items"] == ["Please never call me after 9 pm."]


def test_task_goals_consolidate_but_keep_every_constraint() -> None:
    prior = bullets(
        ["Goal: ship it"] + [f"Never touch module {n}" for n in range(4)]
        + [f"Please review file number {n} today" for n in range(11)]
    )  # fmt: skip
    arguments = ops(
        [user("Please also check the deployment notes again.")], {Section.TASK_AND_GOALS: prior}
    )
    op = arguments["Task & Goals"]
    assert op["op"] == "UPDATE"
    kept = split_items(op["content"])
    assert len(kept) == 16
    assert kept[0] == "Goal: ship it"
    assert all(f"Never touch module {n}" in kept for n in range(4))
    assert "Please review file number 0 today" not in kept
    assert kept[-1] == "Please also check the deployment notes again."
    merged = merge(
        {Section.TASK_AND_GOALS: prior}, {"sections": {"Task & Goals": op}}, counter=words
    )
    assert merged.decision(Section.TASK_AND_GOALS).reason is Reason.ACCEPTED


def test_task_goals_with_nothing_new_keep() -> None:
    prior = "- Goal: x\n- Never book basic economy."
    assert ops([user("Never book basic economy.")], {Section.TASK_AND_GOALS: prior})[
        "Task & Goals"
    ] == {"op": "KEEP"}


def test_key_facts_take_tool_calls_and_anchored_sentences() -> None:
    messages = [
        user("We decided on 2024-05-20 because the fare is $120 for Mia Li."),
        call(
            "c1",
            "book_reservation",
            {
                "user_id": "mia_li_3668",
                "flights": [{"flight_number": "HAT136", "date": "2024-05-20"}],
            },
        ),
        result("c1", json.dumps({"reservation_id": "HATHAT", "status": "ok", "extra": {"a": 1}})),
        call("c2", "search", {"q": "x", "limit": 2}),
        result("c2", "[1, 2, 3]"),
        call("c3", "think", {"thought": "ignored"}),
        call("c4", "get_user", {"user_id": "u1"}),
        result("c4", json.dumps({"name": "Mia", "dob": "1990-04-05", "tier": "gold", "x": 1})),
        assistant("Done."),
    ]
    items = ops(messages)["Key Facts & Decisions"]["items"]
    assert items == [
        "User: We decided on 2024-05-20 because the fare is $120 for Mia Li.",
        "`book_reservation`(user_id `mia_li_3668`, flights [flight_number `HAT136`, date "
        "2024-05-20]) → reservation_id `HATHAT`, status `ok`",
        "`search`(q x, limit 2) → 3 results",
        "`get_user`(user_id `u1`) → name Mia, dob 1990-04-05, tier gold",
    ]


def test_long_tool_arguments_put_identifiers_first() -> None:
    arguments = {"note": "w " * 300, "payment_id": "credit_card_4421486"}
    items = ops([call("c1", "pay", arguments)])["Key Facts & Decisions"]["items"]
    assert items[0].startswith("`pay`(`credit_card_4421486`; note w w")
    assert items[0].endswith("…)")
    plain = ops([call("c1", "say", {"note": "w " * 300})])["Key Facts & Decisions"]["items"]
    assert plain[0].startswith("`say`(note w w")


def test_relative_dates_get_the_session_date_and_speakers_their_names() -> None:
    messages = [
        {"role": "system", "content": "Session 1 began at 1:56 pm on 8 May, 2023."},
        user("I went to a LGBTQ support group yesterday.", "Caroline"),
        assistant("Melanie painted a sunrise with Caroline last Friday in Boston.", "Melanie"),
    ]
    items = ops(messages)["Key Facts & Decisions"]["items"]
    assert items == [
        "Caroline: I went to a LGBTQ support group yesterday (7 May 2023). (said on 8 May 2023)",
        "Melanie: Melanie painted a sunrise with Caroline last Friday (5 May 2023) in Boston. "
        "(said on 8 May 2023)",
    ]


def test_plain_statements_fill_in_when_nothing_is_anchored() -> None:
    messages = [
        user("how are you doing today my friend?"),
        assistant("i am going to send you to a specialist who can run some tests."),
        assistant("ok then see you."),
    ]
    items = ops(messages)["Key Facts & Decisions"]["items"]
    assert items == ["i am going to send you to a specialist who can run some tests."]


def test_key_facts_with_nothing_new_keep() -> None:
    prior = "- `search`(q x) → 3 results"
    arguments = ops(
        [call("c2", "search", {"q": "x"}), result("c2", "[1, 2, 3]")], {Section.KEY_FACTS: prior}
    )
    assert arguments["Key Facts & Decisions"] == {"op": "KEEP"}


def facts(count: int, words_each: int = 3) -> list[str]:
    return [f"Fact{n} about Project{n} " + "w " * words_each for n in range(count)]


def test_key_facts_pack_older_facts_when_over_the_item_limit() -> None:
    prior = bullets(facts(19))
    messages = [
        user("Alice joined Acme on 2024-01-02 as CTO."),
        user("Bob left Initech on 2024-03-04."),
    ]
    op = ops(messages, {Section.KEY_FACTS: prior})["Key Facts & Decisions"]
    assert op["op"] == "UPDATE"
    new_items = split_items(op["content"])
    assert len(new_items) <= 20
    assert " | " in new_items[0]
    assert all(fact.strip() in op["content"] for fact in facts(19))
    merged = merge(
        {Section.KEY_FACTS: prior}, {"sections": {"Key Facts & Decisions": op}}, counter=words
    )
    assert merged.decision(Section.KEY_FACTS).reason is Reason.ACCEPTED


def test_key_facts_fold_the_oldest_into_a_digest_when_over_the_token_limit() -> None:
    prior = bullets(facts(15, words_each=80))
    op = ops([user("Alice joined Acme on 2024-01-02 as CTO.")], {Section.KEY_FACTS: prior})[
        "Key Facts & Decisions"
    ]
    assert op["op"] == "UPDATE"
    assert words(op["content"]) <= 1100
    digest = [item for item in split_items(op["content"]) if item.startswith(DIGEST_PREFIX)]
    assert digest
    assert "Fact0; Project0" in digest[0]
    merged = merge(
        {Section.KEY_FACTS: prior}, {"sections": {"Key Facts & Decisions": op}}, counter=words
    )
    assert merged.decision(Section.KEY_FACTS).reason is Reason.ACCEPTED


def test_a_digest_is_refolded_and_trimmed_but_keeps_enough_anchors() -> None:
    names = [f"Name{n}" for n in range(400)]
    config = ExtractorConfig(key_facts_limit_tokens=150, digest_anchors_per_line=100)
    prior = bullets([f"{DIGEST_PREFIX} " + "; ".join(names), *facts(3, words_each=10)])
    op = ops(
        [user("Alice joined Acme on 2024-01-02 as CTO.")], {Section.KEY_FACTS: prior}, config=config
    )["Key Facts & Decisions"]
    assert op["op"] == "UPDATE"
    merged = merge(
        {Section.KEY_FACTS: prior}, {"sections": {"Key Facts & Decisions": op}}, counter=words
    )
    decision = merged.decision(Section.KEY_FACTS)
    assert decision.reason is Reason.ACCEPTED
    assert float(decision.details["coverage"]) >= 0.75  # type: ignore[arg-type]


def test_a_digest_trim_stops_at_the_coverage_floor() -> None:
    config = ExtractorConfig(key_facts_limit_tokens=5)
    prior = bullets([f"{DIGEST_PREFIX} Alpha; Bravo; Charlie; Delta"])
    op = ops(
        [user("Echo met Foxtrot on 2024-01-02 at noon.")], {Section.KEY_FACTS: prior}, config=config
    )["Key Facts & Decisions"]
    merged = merge(
        {Section.KEY_FACTS: prior}, {"sections": {"Key Facts & Decisions": op}}, counter=words
    )
    assert merged.decision(Section.KEY_FACTS).reason is Reason.ACCEPTED


def test_a_prior_with_the_sentinel_is_always_consolidated() -> None:
    prior = bullets([*facts(3), SENTINEL])
    op = ops([user("Alice joined Acme on 2024-01-02 as CTO.")], {Section.KEY_FACTS: prior})[
        "Key Facts & Decisions"
    ]
    assert op["op"] == "UPDATE"
    assert SENTINEL not in op["content"]


def test_files_come_from_text_tool_arguments_and_focused_outputs() -> None:
    listing = "\n".join(f"file{n}.py" for n in range(6)) + "\n[File: /repo/src/open.py (3 lines)]"
    messages = [
        user("Look at app/main.py and n/a please"),
        call("c1", "open", {"path": "src/util.py"}),
        result("c1", "[File: /repo/src/util.py (10 lines total)]"),
        call("c2", "ls", "ls -R"),
        result("c2", listing),
        call("c3", "cat", "not json: docs/readme.md"),
        result("c3", "/venv/lib/site-packages/pkg/mod.py"),
        assistant("The fix goes into src/util.py."),
    ]
    items = ops(messages)["Files & Context"]["items"]
    assert items == [
        "app/main.py (mentioned by User)",
        "src/util.py (used by open)",
        "/repo/src/util.py (seen in open output)",
        "/repo/src/open.py (seen in ls output)",
        "docs/readme.md (used by cat)",
    ]


def test_files_skip_known_paths_and_pack_when_over_the_limit() -> None:
    prior = bullets([f"pkg/module_{n}.py" for n in range(19)])
    messages = [user("Edit pkg/module_3.py, module_3.py and pkg/new_a.py and pkg/new_b.py")]
    op = ops(messages, {Section.FILES: prior})["Files & Context"]
    assert op["op"] == "UPDATE"
    assert op["content"].count("module_3.py") == 1
    merged = merge({Section.FILES: prior}, {"sections": {"Files & Context": op}}, counter=words)
    assert merged.decision(Section.FILES).reason is Reason.ACCEPTED
    assert len(split_items(merged.sections[Section.FILES])) <= 20


@pytest.mark.parametrize(
    ("prior", "mention", "kept"),
    [
        ("- app/models/user.py", "user.py", False),
        ("- app/models/user.py", "models/user.py", False),
        ("- app/models/user.py", "/models/user.py", False),
        ("- app/models/user.py", "els/user.py", True),
        ("- app/models/user.py", "app/models/user.py", False),
        ("- app/models/user.py", "src/app/models/user.py", True),
        ("- user.py", "app/user.py", True),
        ("- /srv/", "/srv/", False),
        ("- docs/", "docs/guide.md", True),
        ("", "docs/guide.md", True),
    ],
)
def test_files_skip_a_path_a_known_one_ends_with(prior: str, mention: str, kept: bool) -> None:
    op = ops([user(f"Look at {mention} now")], {Section.FILES: prior})["Files & Context"]
    items = op.get("items", [])
    assert (f"{mention.rstrip('/')} (mentioned by User)" in items) is kept


def test_files_name_a_path_once_however_often_mentioned() -> None:
    messages = [user("Open app/core/db.py."), user("Now db.py again, and app/core/db.py.")]
    assert ops(messages)["Files & Context"]["items"] == ["app/core/db.py (mentioned by User)"]


def test_files_with_nothing_new_keep() -> None:
    assert ops([user("no paths here")])["Files & Context"] == {"op": "KEEP"}


def test_errors_come_from_outputs_user_reports_and_corrections() -> None:
    messages = [
        user("Running it gives ValueError: bad input"),
        call("c1", "run", "pytest"),
        result(
            "c1",
            "collected 3 items\n12:    raise ValueError(msg)\n- E999 IndentationError: unexpected "
            "indent\nFAILED tests/test_x.py::test_a\nError: payment does not add up",
        ),
        assistant("I changed the rounding."),
        user("No, that is not what I asked. Keep the rounding."),
        assistant("Do you want me to revert?"),
        user("No, leave it."),
    ]
    items = ops(messages)["Errors & Corrections"]["items"]
    assert items == [
        "User reported: Running it gives ValueError: bad input",
        "run: E999 IndentationError: unexpected indent",
        "run: FAILED tests/test_x.py::test_a",
        "run: Error: payment does not add up",
        'Correction from User: "Keep the rounding." replaces Assistant\'s "I changed the rounding."',
    ]


def test_errors_are_capped_per_batch() -> None:
    output = "\n".join(f"Error: failure number {n}" for n in range(10))
    items = ops([call("c1", "run", "x"), result("c1", output)])["Errors & Corrections"]["items"]
    assert len(items) == ExtractorConfig().errors_per_batch


def test_a_bare_correction_needs_the_statement_it_corrects() -> None:
    assert ops([user("No, wrong.")])["Errors & Corrections"] == {"op": "KEEP"}
    assert ops([user("That's wrong: the port is 8080.")])["Errors & Corrections"] == {
        "op": "APPEND",
        "items": ['Correction from User: "the port is 8080"'],
    }


def test_open_issues_take_todos_and_unanswered_questions() -> None:
    messages = [
        user("TODO: update the changelog"),
        assistant("Which date should the release have? Also, is v2 final?"),
    ]
    assert ops(messages)["Open Issues"]["items"] == [
        "TODO: update the changelog",
        "Question from Assistant: Which date should the release have?",
        "Question from Assistant: Also, is v2 final?",
    ]


def test_answered_questions_and_done_todos_are_resolved_then_dropped() -> None:
    prior = "\n".join(
        [
            "### Release",
            "- Question from Assistant: Which date should the release have?",
            "- Question from User: Can you check the logs for errors?",
            "- TODO: update the changelog for the release",
            "- TODO: rewrite the parser",
            "- [resolved] Old question",
            "- [silently dropped, restored] Kept once",
            "- Something a model wrote",
        ]
    )
    messages = [
        user("The release date should be 2024-06-01."),
        user("I updated the changelog for the release, done."),
    ]
    op = ops(messages, {Section.OPEN_ISSUES: prior})["Open Issues"]
    assert op == {
        "op": "UPDATE",
        "content": "\n".join(
            [
                "### Release",
                "- [resolved] Question from Assistant: Which date should the release have?",
                "- Question from User: Can you check the logs for errors?",
                "- [resolved] TODO: update the changelog for the release",
                "- TODO: rewrite the parser",
                "- [silently dropped, restored] Kept once",
                "- Something a model wrote",
            ]
        ),
    }
    merged = merge({Section.OPEN_ISSUES: prior}, {"sections": {"Open Issues": op}}, counter=words)
    assert merged.decision(Section.OPEN_ISSUES).reason is Reason.ACCEPTED


def test_open_issues_with_nothing_new_keep() -> None:
    assert ops([user("fine.")], {Section.OPEN_ISSUES: "- TODO: x y"})["Open Issues"] == {
        "op": "KEEP"
    }


@pytest.mark.parametrize(
    ("text", "limit", "clipped"),
    [
        ("short", 10, "short"),
        ("a  b\n c", 10, "a b c"),
        ("one two three four five six", 12, "one two…"),
        ("x" * 30, 10, "x" * 9 + "…"),
        ("alpha, beta gamma", 13, "alpha, beta…"),
    ],
)
def test_clip(text: str, limit: int, clipped: str) -> None:
    assert clip(text, limit) == clipped


def test_sentences_drop_list_markup() -> None:
    assert sentences("- **Flight** HAT1\n\n1. Second. Third!\n> quoted") == [
        "Flight HAT1",
        "Second.",
        "Third!",
        "quoted",
    ]


def test_the_extractor_is_deterministic() -> None:
    messages = [user("We decided on 2024-05-20 because of Mia."), call("c1", "f", {"a": "b_1"})]
    assert extract_ops(messages) == extract_ops(list(messages))


def test_results_belong_to_the_latest_call_with_their_id() -> None:
    messages = [
        call("same", "search_direct", {"q": "a"}),
        result("same", "[1, 2]"),
        call("same", "search_onestop", {"q": "b"}),
        result("same", "[1, 2, 3, 4]"),
    ]
    items = ops(messages)["Key Facts & Decisions"]["items"]
    assert items == ["`search_direct`(q a) → 2 results", "`search_onestop`(q b) → 4 results"]


def test_tool_calls_are_taken_in_order_up_to_the_batch_limit() -> None:
    limit = ExtractorConfig().key_facts_per_batch
    messages = [call(f"c{n}", "lookup", {"record_id": f"r_{n}"}) for n in range(limit + 3)]
    prior = {Section.KEY_FACTS: "- `lookup`(record_id `r_0`)"}
    items = ops(messages, prior)["Key Facts & Decisions"]["items"]
    assert items == [f"`lookup`(record_id `r_{n}`)" for n in range(1, limit + 1)]


def test_plain_statements_already_known_are_not_repeated() -> None:
    known = "i am going to send you to a specialist who can run some tests."
    messages = [assistant(known), assistant("then we will talk about the results of them all.")]
    items = ops(messages, {Section.KEY_FACTS: f"- {known}"})["Key Facts & Decisions"]["items"]
    assert items == ["then we will talk about the results of them all."]
