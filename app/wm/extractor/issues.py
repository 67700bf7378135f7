"""Open Issues: TODOs and open questions, and marking an issue resolved once it is answered.

Owns the section's op: new TODOs (``todos``) and the questions of the batch that nothing in it
answers (``questions``); a question already listed is answered by this batch when a message from
someone else shares its words, or when the batch opens with a plain reply to the questions the
section ended with; a TODO is done when a message says so (a completion word with its
subject). Issues closed in an earlier round are dropped. Never drops an open issue: it is
marked ``[resolved]`` first (guard F).
"""

from __future__ import annotations

import re
from typing import Final

from app.wm.anchors import title_words
from app.wm.extractor.arguments import append_op, keep_op, update_op
from app.wm.extractor.config import ExtractorConfig
from app.wm.extractor.questions import is_plain_reply, open_questions, shares_words
from app.wm.extractor.reading import Reading, clip, label
from app.wm.extractor.todos import todos_of
from app.wm.items import Marker, fresh_items, is_heading, markers_of, strip_bullet
from app.wm.messages import MessageView

TODO_PREFIX: Final = "TODO:"
QUESTION_PREFIX: Final = "Question from "

_COMPLETION = re.compile(
    r"\b(?:done|fixed|resolved|completed|implemented|finished|submitted|updated)\b", re.IGNORECASE
)
_QUESTION_CHARS: Final = 200


def issues_op(reading: Reading, prior: str, config: ExtractorConfig) -> dict[str, object]:
    new = _new_issues(reading, config)
    answered = _answered_by_reply(reading, prior)
    changed = False
    lines: list[str] = []
    for number, line in enumerate(prior.splitlines()):
        if not line.strip() or is_heading(line):
            lines.append(line)
            continue
        item = strip_bullet(line)
        carried = markers_of(item)
        if carried & {Marker.RESOLVED, Marker.DONE}:
            # Closed in an earlier round: dropping it now is allowed and keeps the section small.
            changed = True
            continue
        answer = answered.get(number) if not carried else None
        if not carried and answer is None:
            answer = _answer(item, reading)
        if answer is not None:
            lines.append(f"- {reading.cite(f'{Marker.RESOLVED.value} {item}', answer)}")
            changed = True
            continue
        lines.append(line)
    fresh = fresh_items("\n".join(lines), new)
    if changed:
        content = "\n".join(lines + [f"- {item}" for item in fresh]).strip()
        return update_op(content)
    return append_op(fresh) if fresh else keep_op()


def _new_issues(reading: Reading, config: ExtractorConfig) -> list[str]:
    todos = [
        reading.cite(f"{TODO_PREFIX} {todo}", view)
        for view in reading.talk
        for todo in todos_of(view.text)
    ][: config.issues_per_batch]
    asked = open_questions(reading.talk)[-config.issues_per_batch :]
    questions = [
        reading.cite(
            f"{QUESTION_PREFIX}{question.asker}: {clip(question.text, _QUESTION_CHARS)}",
            question.view,
        )
        for question in asked
    ]
    return todos + questions


def _asker(item: str) -> str | None:
    if not item.startswith(QUESTION_PREFIX):
        return None
    return item[len(QUESTION_PREFIX) :].split(":", 1)[0]


def _answered_by_reply(reading: Reading, prior: str) -> dict[int, MessageView]:
    """Lines of ``prior`` answered because the batch opens with a plain reply to them: the
    questions the section ends with, asked by someone other than the one replying (each with
    that reply)."""
    if not reading.talk or not is_plain_reply(reading.talk[0]):
        return {}
    reply = reading.talk[0]
    replier = label(reply)
    answered: dict[int, MessageView] = {}
    lines = prior.splitlines()
    for number in range(len(lines) - 1, -1, -1):
        line = lines[number]
        if not line.strip() or is_heading(line):
            continue
        item = strip_bullet(line)
        asker = _asker(item)
        if asker is None or asker == replier or markers_of(item):
            break
        answered[number] = reply
    return answered


def _answer(item: str, reading: Reading) -> MessageView | None:
    """The message of the batch that answers a listed question or says a TODO is done."""
    asker = _asker(item)
    if asker is not None:
        question = item[len(QUESTION_PREFIX) + len(asker) + 1 :]
        return next(
            (
                view
                for view in reading.talk
                if label(view) != asker and shares_words(question, view.text)
            ),
            None,
        )
    if item.startswith(TODO_PREFIX):
        words = title_words(item[len(TODO_PREFIX) :])
        return next(
            (
                view
                for view in reading.talk
                if _COMPLETION.search(view.text) and len(words & title_words(view.text)) >= 2
            ),
            None,
        )
    return None
