"""Table tests of the offline extractor's sentence rules, each written from its rule's docstring:
corrections, constraints, open questions, TODOs, session days and relative dates, and the
section ops they feed (Errors & Corrections, Task & Goals, Open Issues, Key Facts)."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from app.wm.extractor import extract_ops
from app.wm.extractor.constraints import is_constraint_sentence
from app.wm.extractor.corrections import Correction, correction, is_explicit
from app.wm.extractor.dates import format_day, has_relative_time, resolve_relative, session_day
from app.wm.extractor.questions import Question, is_plain_reply, open_questions
from app.wm.extractor.title_state import carried_day
from app.wm.extractor.todos import TODO_CHARS, todos_of
from app.wm.merge import merge
from app.wm.messages import MessageView, read_messages
from app.wm.schema import UPDATE_VALIDATOR
from app.wm.sections import Section, empty_sections
from tests.wm.helpers import words


def view(role: str, text: str, name: str | None = None) -> MessageView:
    message: dict[str, Any] = {"role": role, "content": text}
    if name:
        message["name"] = name
    return read_messages([message])[0]


def sections_of(messages: list[dict[str, Any]], prior: dict[Section, str] | None = None) -> Any:
    arguments = extract_ops(messages, prior, counter=words)
    assert UPDATE_VALIDATOR.is_valid(arguments)
    return arguments["sections"]


# Corrections ------------------------------------------------------------------------------

STATEMENT = "I configured port 3000 and Python 3.11 in the Dockerfile."
QUESTION = "I configured port 3000. Should I also add a healthcheck?"


@pytest.mark.parametrize(
    ("previous", "text", "chat", "expected"),
    [
        # Explicit markers correct whatever they follow, a question included.
        (STATEMENT, "No, that is wrong: use port 8080.", False,
         Correction("use port 8080", STATEMENT)),
        (QUESTION, "No, that is wrong: use port 8080.", False,
         Correction("use port 8080", "I configured port 3000.")),
        (STATEMENT, "That's not right. The port is 8080.", False,
         Correction("The port is 8080.", STATEMENT)),
        (STATEMENT, "I meant port 8080", False, Correction("I meant port 8080", STATEMENT)),
        (STATEMENT, "You misunderstood, keep port 3000", False,
         Correction("You misunderstood, keep port 3000", STATEMENT)),
        # "Actually" and "no," after a statement; "no" after a question is an answer.
        (STATEMENT, "Actually, use Python 3.12.", False, Correction("use Python 3.12", STATEMENT)),
        (STATEMENT, "No, keep Python 3.11 and change the port.", False,
         Correction("keep Python 3.11 and change the port", STATEMENT)),
        (QUESTION, "No, leave it.", False, None),
        # "instead" (not "instead of") says what replaces what.
        (STATEMENT, "Use port 8080 instead.", False, Correction("Use port 8080 instead", STATEMENT)),
        (STATEMENT, "Use Poetry instead of pip.", False, None),
        # Nothing to correct, or only a marker with nothing it refers to.
        (None, "Actually, use Python 3.12.", False, None),
        (None, "No, wrong.", False, None),
        (None, "That's wrong: the port is 8080.", False, Correction("the port is 8080", "")),
        (STATEMENT, "Thanks, that works.", False, None),
        (STATEMENT, "   ", False, None),
        # Only a marker: what it corrects says the rest.
        (STATEMENT, "No, wrong.", False, Correction("No, wrong.", STATEMENT)),
        # The previous message made no statement to replace.
        ("Should I use port 3000?", "That's wrong: use 8080.", False, Correction("use 8080", "")),
        # Between people only explicit markers count.
        (STATEMENT, "Actually, I went there last year.", True, None),
        (STATEMENT, "No, it was fun.", True, None),
        (STATEMENT, "That's wrong, it was in May.", True, Correction("it was in May", STATEMENT)),
    ],
)  # fmt: skip
def test_corrections(
    previous: str | None, text: str, chat: bool, expected: Correction | None
) -> None:
    before = None if previous is None else view("assistant", previous)
    assert correction(view("user", text), before, chat=chat) == expected


def test_the_replaced_statement_is_the_one_sharing_most_words() -> None:
    previous = view("assistant", "I added the healthcheck. I set the port to 3000. Done.")
    made = correction(view("user", "No, the port must be 8080."), previous, chat=False)
    assert made == Correction("the port must be 8080", "I set the port to 3000.")
    unrelated = correction(view("user", "Wrong, use Debian."), previous, chat=False)
    assert unrelated == Correction("use Debian", "I added the healthcheck.")


@pytest.mark.parametrize(
    ("text", "explicit"),
    [("that's wrong", True), ("That is incorrect.", True), ("Not quite.", True),
     ("It's wrong", True), ("wrongly filed", False), ("No.", False), ("Actually no", False)],
)  # fmt: skip
def test_explicit_markers(text: str, explicit: bool) -> None:
    assert is_explicit(text) is explicit


def test_a_correction_is_recorded_with_what_it_replaces() -> None:
    messages = [
        {"role": "user", "content": "Set up the service on port 3000."},
        {"role": "assistant", "content": f"{QUESTION}"},
        {"role": "user", "content": "No, that is wrong: use port 8080."},
    ]
    assert sections_of(messages)["Errors & Corrections"] == {
        "op": "APPEND",
        "items": [
            'Correction from User: "use port 8080" replaces Assistant\'s "I configured port 3000."'
        ],
    }


def test_errors_named_by_the_assistant_are_recorded_but_code_lines_are_not() -> None:
    messages = [
        {"role": "user", "content": "Fix the crash in app/models/user.py."},
        {
            "role": "assistant",
            "content": "Traceback ends in KeyError: email. I will add a default.\n"
            "except KeyError:\nraise ValueError(msg)\nx = ValueError",
        },
    ]
    assert sections_of(messages)["Errors & Corrections"] == {
        "op": "APPEND",
        "items": ["Assistant reported: Traceback ends in KeyError: email."],
    }


# Constraints ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "chat", "constraint"),
    [
        # Every keyword of guard C, phrased as a constraint or a preference.
        ("You must run the tests before pushing.", False, True),
        ("The API must return JSON.", False, True),
        ("Never touch prod.", False, True),
        ("Always write the changelog.", False, True),
        ("Don't use tabs.", False, True),
        ("Do not deploy on Fridays.", False, True),
        ("Only book refundable fares.", False, True),
        ("A review is required for every migration.", False, True),
        ("Review requires two approvals.", False, True),
        ("Force pushes are forbidden.", False, True),
        ("We no longer support Python 3.8.", False, True),
        ("Prefer direct flights.", False, True),
        ("Use Poetry instead of pip.", False, True),
        ("Book the 10 am flight instead of the 8 am one.", False, True),
        ("Avoid the staging database.", False, True),
        ("I don't want travel insurance.", False, True),
        ("I only want aisle seats.", False, True),
        ("Please make sure to never skip the tests.", False, True),
        ("不要修改生产环境。", False, True),
        ("部署必须经过评审。", False, True),
        # The same words describing, guessing or asking.
        ("I must have left it at home.", False, False),
        ("It must have been the cache.", False, False),
        ("I never liked that city.", False, False),
        ("I always wanted a dog.", False, False),
        ("I don't know the answer.", False, False),
        ("I only have one bag.", False, False),
        ("Do I need to avoid anything?", False, False),
        ("Can you make sure it never happens?", False, False),
        ("The flight leaves at noon.", False, False),
        # Between people, only instructions and wishes count.
        ("I went to the park instead of the gym.", True, False),
        ("The rules say it is required.", True, False),
        ("Please never call me after 9 pm.", True, True),
        ("Prefer tea.", True, True),
        # A speaker's own preference is a taste, not an instruction about the task.
        ("I prefer tabs over spaces.", False, False),
        ("I prefer direct flights.", False, False),
        ("I'd rather fly in the morning.", False, False),
        ("We would much rather use Poetry.", False, False),
        ("I prefer tea.", True, False),
        ("The team prefers squash merges.", False, True),
    ],
)
def test_constraint_sentences(sentence: str, chat: bool, constraint: bool) -> None:
    assert is_constraint_sentence(sentence, chat=chat) is constraint


def test_task_goals_never_repeat_the_goal_or_a_known_constraint() -> None:
    messages = [
        {"role": "user", "content": "Fix the login timeout. Never touch prod. never touch prod"}
    ]
    items = sections_of(messages)["Task & Goals"]["items"]
    assert items == ["Goal: Fix the login timeout", "Never touch prod."]
    prior = {Section.TASK_AND_GOALS: "- Goal: Fix the login timeout\n- Never touch prod."}
    again = [{"role": "user", "content": "I need you to fix the login timeout. Never touch PROD!"}]
    assert sections_of(again, prior)["Task & Goals"] == {"op": "KEEP"}


@pytest.mark.parametrize(
    ("text", "items"),
    [
        # The goal is written once: not again as the same request, asked another way, nor as
        # the constraint it was taken from.
        ("Migrate billing to Postgres 16 today. Please migrate billing to Postgres 16 today.",
         ["Goal: Migrate billing to Postgres 16 today"]),
        ("Migrate billing to Postgres 16 today. Could you migrate billing to Postgres 16 today?",
         ["Goal: Migrate billing to Postgres 16 today"]),
        ("I need to change my flight to Newark. I need to change my flight to Newark!",
         ["Goal: I need to change my flight to Newark"]),
        ("Fix src/a.py. Never push directly to main.", ["Never push directly to main."]),
        # A different request is not the goal.
        ("Migrate billing to Postgres 16 today. Please also migrate the ledger to Postgres 16.",
         ["Goal: Migrate billing to Postgres 16 today",
          "Please also migrate the ledger to Postgres 16."]),
        # A preference is no Task & Goals constraint; an instruction is.
        ("Fix the login timeout. I prefer tabs over spaces.", ["Goal: Fix the login timeout"]),
        ("Fix the login timeout. Prefer tabs over spaces.",
         ["Goal: Fix the login timeout", "Prefer tabs over spaces."]),
    ],
)  # fmt: skip
def test_task_goals_hold_the_goal_once_and_no_preference(text: str, items: list[str]) -> None:
    assert sections_of([{"role": "user", "content": text}])["Task & Goals"]["items"] == items


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        # A short sentence is a fact when it holds a date or a number, not otherwise.
        ("Deadline is 2024-07-01.", ["User: Deadline is 2024-07-01."]),
        ("Budget: 300 dollars.", ["User: Budget: 300 dollars."]),
        ("Seat 14C.", ["User: Seat 14C."]),
        ("Deadline is Friday.", []),
        ("That sounds great.", []),
        # The user's own preference is a fact about them.
        ("I prefer tabs over spaces.", ["User: I prefer tabs over spaces."]),
        ("I'd rather fly in the morning.", ["User: I'd rather fly in the morning."]),
        ("Do you prefer tabs over spaces?", []),
    ],
)  # fmt: skip
def test_key_facts_take_dated_short_sentences_and_preferences(text: str, facts: list[str]) -> None:
    messages = [
        {"role": "user", "content": text},
        {"role": "assistant", "content": "Noted."},
    ]
    section = sections_of(messages)["Key Facts & Decisions"]
    assert section.get("items", []) == facts


# Open questions ---------------------------------------------------------------------------


def talk(*turns: tuple[str, str]) -> list[MessageView]:
    return [view(role, text) for role, text in turns]


@pytest.mark.parametrize(
    ("turns", "open_"),
    [
        # Answered by the reply to its message.
        ([("user", "Is a migration needed here?"), ("assistant", "Yes, one column.")], []),
        # The last message's question has no reply yet.
        ([("user", "Hi."), ("user", "Is a migration needed here?")],
         [Question("User", "Is a migration needed here?")]),
        # An acknowledgement or a correction is not an answer.
        ([("assistant", "Should I also add a healthcheck?"), ("user", "Thanks!")],
         [Question("Assistant", "Should I also add a healthcheck?")]),
        ([("assistant", "Done. Should I also add a healthcheck?"),
          ("user", "No, that is wrong: use port 8080.")],
         [Question("Assistant", "Should I also add a healthcheck?")]),
        # Unanswered by the reply, answered later by a message sharing two of its words.
        ([("assistant", "Should I add a healthcheck endpoint?"), ("user", "Thanks!"),
          ("user", "The healthcheck endpoint can wait.")], []),
        # One shared word is not enough.
        ([("assistant", "Should I add a healthcheck endpoint?"), ("user", "ok"),
          ("user", "The healthcheck is fine.")],
         [Question("Assistant", "Should I add a healthcheck endpoint?")]),
        # Every question of a message the reply leaves open stays open.
        ([("assistant", "Which region do you want? Which size do you need?"), ("user", "ok")],
         [Question("Assistant", "Which region do you want?"),
          Question("Assistant", "Which size do you need?")]),
        # Short questions ("Why?") and the asker's own later words do not count.
        ([("user", "Why?"), ("user", "Which port is free now?"),
          ("user", "Port is free now, I checked")],
         [Question("User", "Which port is free now?")]),
    ],
)  # fmt: skip
def test_open_questions(turns: list[tuple[str, str]], open_: list[Question]) -> None:
    assert open_questions(talk(*turns)) == open_


@pytest.mark.parametrize(
    ("text", "plain"),
    [("Thanks!", False), ("ok, great", False), ("Sounds good.", False), ("Yes.", True),
     ("Use 2024-06-01.", True), ("That's wrong.", False)],
)  # fmt: skip
def test_plain_replies(text: str, plain: bool) -> None:
    assert is_plain_reply(view("user", text)) is plain


def test_an_assistant_question_is_an_open_issue_until_answered() -> None:
    messages = [
        {"role": "user", "content": "Deploy the service."},
        {"role": "assistant", "content": "Deployed. Should I also add a healthcheck?"},
        {"role": "user", "content": "Thanks."},
    ]
    first = sections_of(messages)["Open Issues"]
    assert first == {
        "op": "APPEND",
        "items": ["Question from Assistant: Should I also add a healthcheck?"],
    }
    prior = {Section.OPEN_ISSUES: "- Question from Assistant: Should I also add a healthcheck?"}
    later = [{"role": "user", "content": "Yes, add the healthcheck now."}]
    assert sections_of(later, prior)["Open Issues"] == {
        "op": "UPDATE",
        "content": "- [resolved] Question from Assistant: Should I also add a healthcheck?",
    }


def test_a_batch_opening_with_a_reply_answers_the_questions_the_section_ends_with() -> None:
    prior = {
        Section.OPEN_ISSUES: "- TODO: rotate the keys\n### Deploy\n"
        "- Question from Assistant: Which region?\n\n- Question from Assistant: Which size?"
    }
    reply = [{"role": "user", "content": "Frankfurt, small."}]
    assert sections_of(reply, prior)["Open Issues"]["content"].splitlines() == [
        "- TODO: rotate the keys",
        "### Deploy",
        "- [resolved] Question from Assistant: Which region?",
        "",
        "- [resolved] Question from Assistant: Which size?",
    ]
    own = [{"role": "assistant", "content": "Frankfurt, small."}]
    assert sections_of(own, prior)["Open Issues"] == {"op": "KEEP"}
    thanks = [{"role": "user", "content": "Thanks!"}]
    assert sections_of(thanks, prior)["Open Issues"] == {"op": "KEEP"}


# TODOs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "todos"),
    [
        ("Switched to 8080 and Python 3.12. TODO: update the Dockerfile.",
         ["update the Dockerfile."]),
        ("TODO update the docs", ["update the docs"]),
        ("- TODO: bump the version\n- FIXME - flaky test in ci", ["bump the version",
                                                                 "flaky test in ci"]),
        ("Note (TODO: check the limits) later", ["check the limits) later"]),
        ("TODO: first part. TODO: second part", ["first part.", "second part"]),
        ("There are TODOs in the parser", []),
        ("the TODO list is long", []),
        ("TODO:", []),
    ],
)  # fmt: skip
def test_todos(text: str, todos: list[str]) -> None:
    assert todos_of(text) == todos


def test_a_long_todo_is_cut_only_past_its_limit() -> None:
    text = "TODO: " + "word " * 200
    (found,) = todos_of(text)
    assert len(found) <= TODO_CHARS
    assert found.endswith("…")
    whole = "TODO: " + "word " * 90
    assert todos_of(whole) == [whole[6:].strip()]


def test_a_todo_is_an_open_issue_kept_whole() -> None:
    messages = [
        {
            "role": "assistant",
            "content": "Switched to 8080 and Python 3.12. TODO: update the Dockerfile.",
        }
    ]
    assert sections_of(messages)["Open Issues"]["items"] == ["TODO: update the Dockerfile."]


# Session days and relative dates ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("Session 3 began at 1:56 pm on 8 May, 2023.", date(2023, 5, 8)),
        ("The current time is 2024-05-15 15:00:00 EST.", date(2024, 5, 15)),
        ("on 31 February 2023", None),
        ("no date here", None),
    ],
)
def test_session_day(text: str, day: date | None) -> None:
    assert session_day(text) == day


MONDAY = date(2023, 5, 8)


@pytest.mark.parametrize(
    ("sentence", "dated"),
    [
        ("I went there yesterday.", "I went there yesterday (7 May 2023)."),
        ("We met last night", "We met last night (7 May 2023)"),
        ("I start today", "I start today (8 May 2023)"),
        ("Dinner this evening", "Dinner this evening (8 May 2023)"),
        ("I fly tomorrow.", "I fly tomorrow (9 May 2023)."),
        ("It was last Friday.", "It was last Friday (5 May 2023)."),
        ("It was last Monday.", "It was last Monday (1 May 2023)."),
        ("Three days ago it rained.", "Three days ago (5 May 2023) it rained."),
        ("2 weeks ago", "2 weeks ago (the week of 24 April 2023)"),
        ("a month ago", "a month ago (April 2023)"),
        ("two years ago", "two years ago (2021)"),
        ("I ran a race last week.", "I ran a race last week (the week before 8 May 2023)."),
        ("next weekend", "next weekend (the weekend after 8 May 2023)"),
        ("last month", "last month (April 2023)"),
        ("next year", "next year (2024)"),
        ("this year", "this year (2023)"),
        ("this month", "this month (May 2023)"),
        ("this week", "this week (the week of 8 May 2023)"),
        ("see you next Friday", "see you next Friday (12 May 2023)"),
        ("next Monday", "next Monday (15 May 2023)"),
        ("I paint every day.", "I paint every day."),
    ],
)
def test_relative_dates(sentence: str, dated: str) -> None:
    assert resolve_relative(sentence, MONDAY) == dated
    assert has_relative_time(sentence) is (dated != sentence)


@pytest.mark.parametrize(
    "sentence", ["I moved here recently.", "We met a while ago.", "It was this Tuesday."]
)
def test_vague_relative_times_are_dated_but_not_resolved(sentence: str) -> None:
    assert has_relative_time(sentence)
    assert resolve_relative(sentence, MONDAY) == sentence


def test_months_roll_over_years() -> None:
    assert resolve_relative("last month", date(2023, 1, 3)) == "last month (December 2022)"
    assert resolve_relative("next month", date(2023, 12, 3)) == "next month (January 2024)"
    assert format_day(date(2024, 2, 29)) == "29 February 2024"


def test_the_session_day_carries_over_from_the_prior_state() -> None:
    state = "Latest session date: 8 May 2023.\nLatest from Caroline: hi"
    assert carried_day(state) == MONDAY
    assert carried_day("Latest from Caroline: 2024-01-01") is None
    prior = empty_sections()
    prior[Section.CURRENT_STATE] = state
    messages = [
        {"role": "user", "name": "Caroline", "content": "I went to a LGBTQ group yesterday."},
        {"role": "assistant", "name": "Melanie", "content": "Nice, Caroline!"},
    ]
    facts = sections_of(messages, prior)["Key Facts & Decisions"]["items"]
    assert facts == [
        "Caroline: I went to a LGBTQ group yesterday (7 May 2023). (said on 8 May 2023)"
    ]
    merged = merge(prior, extract_ops(messages, prior, counter=words), counter=words)
    assert merged.sections[Section.CURRENT_STATE].startswith("Latest session date: 8 May 2023.")


# Whole conversations a new user tries first -----------------------------------------------


def test_the_readme_conversation_records_its_error_and_its_open_question() -> None:
    messages = [
        {"role": "user", "content": "Fix the crash in app/models/user.py. Never touch prod."},
        {
            "role": "assistant",
            "content": "Traceback ends in KeyError: email. I will add a default.",
        },
        {"role": "user", "content": "Good. Is a migration needed?"},
    ]
    result = merge(empty_sections(), extract_ops(messages, counter=words), counter=words)
    assert result.sections[Section.TASK_AND_GOALS] == (
        "- Goal: Fix the crash in app/models/user.py\n- Never touch prod."
    )
    assert result.sections[Section.ERRORS] == (
        "- Assistant reported: Traceback ends in KeyError: email."
    )
    assert result.sections[Section.OPEN_ISSUES] == "- Question from User: Is a migration needed?"
    assert result.sections[Section.FILES] == "- app/models/user.py (mentioned by User)"


def test_a_port_change_is_a_correction_a_constraint_a_todo_and_an_open_question() -> None:
    messages = [
        {"role": "user", "content": "Set up the service on port 3000 with Python 3.11."},
        {"role": "assistant", "content": f"{STATEMENT} Should I also add a healthcheck?"},
        {"role": "user", "content": "No, that is wrong: use port 8080. Use Poetry instead of pip."},
        {
            "role": "assistant",
            "content": "Switched to 8080 and Python 3.12. TODO: update the Dockerfile.",
        },
        {"role": "user", "content": "Thanks."},
    ]
    result = merge(empty_sections(), extract_ops(messages, counter=words), counter=words)
    assert result.sections[Section.TASK_AND_GOALS].splitlines() == [
        "- Goal: Set up the service on port 3000 with Python 3.11",
        "- Use Poetry instead of pip.",
    ]
    assert result.sections[Section.ERRORS] == (
        f'- Correction from User: "use port 8080" replaces Assistant\'s "{STATEMENT}"'
    )
    assert result.sections[Section.OPEN_ISSUES].splitlines() == [
        "- TODO: update the Dockerfile.",
        "- Question from Assistant: Should I also add a healthcheck?",
    ]
