"""Session Title and Current State: what the batch is about, and where it stands at its end.

Owns the title chosen for a session without one and the rewritten Current State (latest user
request, latest reply, last tool call). Never changes a title that already exists: guard A
protects it, so the extractor does not even ask.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Final

from app.wm.extractor.arguments import keep_op, update_op
from app.wm.extractor.config import ExtractorConfig
from app.wm.extractor.dates import session_day
from app.wm.extractor.reading import Reading, clip, is_greeting, label, sentences
from app.wm.extractor.tool_calls import SKIPPED_TOOLS, call_summary, result_summary
from app.wm.messages import MessageView

_ISSUE = re.compile(r"ISSUE:\s*\n\s*(\S[^\n]*)")
DAY_PREFIX: Final = "Latest session date:"
"""Current State's first line in a dated conversation; the next batch reads its day from it."""


def title_op(reading: Reading, prior: str, config: ExtractorConfig) -> dict[str, object]:
    if prior:
        return keep_op()
    title, views = title_of(reading, config)
    return update_op(reading.cite(title, *views)) if title else keep_op()


def title_of(reading: Reading, config: ExtractorConfig) -> tuple[str, tuple[MessageView, ...]]:
    """The title for a session without one, and the messages it was taken from."""
    users = [v for v in reading.talk if v.role == "user"]
    for view in users:
        issue = _ISSUE.search(view.text)
        if issue is not None:
            return clip(issue.group(1).strip(" #*"), config.title_chars), (view,)
    if reading.chat:
        first, second = reading.speakers[:2]
        opened = tuple(next(v for v in reading.talk if v.speaker == n) for n in (first, second))
        return f"Conversation between {first} and {second}", opened
    for view in users or reading.talk:
        for sentence in sentences(view.text):
            if not is_greeting(sentence) and len(sentence.split()) >= 3:
                return clip(sentence.rstrip(".!?。！？ "), config.title_chars), (view,)
    return "", ()


# Current State ---------------------------------------------------------------------------------


def state_op(reading: Reading, config: ExtractorConfig) -> dict[str, object]:
    lines: list[str] = []
    day = reading.date_before(len(reading.views) - 1) if reading.views else ""
    if day:
        lines.append(reading.cite(f"{DAY_PREFIX} {day}.", reading.day_sources[-1]))
    last_user = next((v for v in reversed(reading.talk) if v.role == "user"), None)
    last_reply = next((v for v in reversed(reading.talk) if v.role == "assistant"), None)
    if last_user is not None:
        line = f"Latest from {label(last_user)}: {clip(last_user.text, config.state_chars)}"
        lines.append(reading.cite(line, last_user))
    if last_reply is not None:
        line = f"Latest from {label(last_reply)}: {clip(last_reply.text, config.state_chars)}"
        lines.append(reading.cite(line, last_reply))
    last_call = next(
        (
            (index, number, call)
            for index in reversed(range(len(reading.views)))
            for number, call in reversed(list(enumerate(reading.views[index].tool_calls)))
            if call.name not in SKIPPED_TOOLS
        ),
        None,
    )
    if last_call is not None:
        index, number, call = last_call
        line = f"Last tool call: {call_summary(call.name, call.arguments, 160)}"
        result = reading.results.get((index, number))
        if result is not None:
            line += f" returned: {result_summary(result.text, 120)}"
        lines.append(reading.cite(line, reading.views[index], result))
    if not lines:
        return keep_op()
    return update_op("\n".join(lines))


def carried_day(prior_state: str) -> date | None:
    """The session day a prior Current State recorded, for a batch that starts mid-session."""
    for line in prior_state.splitlines():
        if line.startswith(DAY_PREFIX):
            return session_day(line)
    return None
