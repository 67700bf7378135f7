"""Open Issues: TODOs and unanswered questions, and marking an issue resolved once it is answered.

Owns when a question counts as answered (someone else spoke) and a TODO as done (a completion
word with its subject), and drops issues closed in an earlier round. Never drops an open issue:
it is marked ``[resolved]`` first (guard F).
"""

from __future__ import annotations

import re
from typing import Final

from app.wm.anchors import title_words
from app.wm.extractor.arguments import append_op, keep_op, update_op
from app.wm.extractor.config import ExtractorConfig
from app.wm.extractor.reading import Reading, clip, label, sentences
from app.wm.items import Marker, fresh_items, is_heading, markers_of, strip_bullet

TODO_PREFIX: Final = "TODO:"
QUESTION_PREFIX: Final = "Question from "

_TODO = re.compile(r"\b(?:TODO|FIXME)\b")
_COMPLETION = re.compile(
    r"\b(?:done|fixed|resolved|completed|implemented|finished|submitted)\b", re.IGNORECASE
)


def issues_op(reading: Reading, prior: str, config: ExtractorConfig) -> dict[str, object]:
    new = _new_issues(reading, config)
    spoke = {label(view) for view in reading.talk}
    changed = False
    lines: list[str] = []
    for line in prior.splitlines():
        if not line.strip() or is_heading(line):
            lines.append(line)
            continue
        item = strip_bullet(line)
        carried = markers_of(item)
        if carried & {Marker.RESOLVED, Marker.DONE}:
            # Closed in an earlier round: dropping it now is allowed and keeps the section small.
            changed = True
            continue
        if not carried and _is_answered(item, spoke, reading):
            lines.append(f"- {Marker.RESOLVED.value} {item}")
            changed = True
            continue
        lines.append(line)
    fresh = fresh_items("\n".join(lines), new)[: config.issues_per_batch]
    if changed:
        content = "\n".join(lines + [f"- {item}" for item in fresh]).strip()
        return update_op(content)
    return append_op(fresh) if fresh else keep_op()


def _new_issues(reading: Reading, config: ExtractorConfig) -> list[str]:
    issues: list[str] = []
    for view in reading.talk:
        for line in view.text.splitlines():
            if _TODO.search(line):
                issues.append(f"{TODO_PREFIX} {clip(_TODO.sub('', line).strip(' :-'), 200)}")
    if reading.talk:
        last = reading.talk[-1]
        for sentence in sentences(last.text):
            if sentence.endswith(("?", "？")) and len(sentence.split()) >= 3:
                issues.append(f"{QUESTION_PREFIX}{label(last)}: {clip(sentence, 200)}")
    return issues


def _is_answered(item: str, spoke: set[str], reading: Reading) -> bool:
    if item.startswith(QUESTION_PREFIX):
        asker = item[len(QUESTION_PREFIX) :].split(":", 1)[0]
        return bool(spoke - {asker})
    if item.startswith(TODO_PREFIX):
        words = title_words(item[len(TODO_PREFIX) :])
        return any(
            _COMPLETION.search(view.text) and len(words & title_words(view.text)) >= 2
            for view in reading.talk
        )
    return False
