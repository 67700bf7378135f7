"""Task & Goals: the goal, the user's constraints and requests, kept within the section's limit.

Owns which user sentences are requests (``constraints`` says which are constraints), that the
section never says the same thing twice (a request that repeats the goal, a constraint already
there: normalised equality, the ``Goal:`` prefix aside), and how the section is consolidated
when full (goals and every constraint stay, older requests make room). Never drops a
constraint: guard C would restore it anyway.
"""

from __future__ import annotations

import re
from typing import Final

from app.wm.extractor.arguments import append_op, keep_op, update_op
from app.wm.extractor.config import ExtractorConfig
from app.wm.extractor.constraints import is_constraint_sentence
from app.wm.extractor.reading import Reading, clip, sentences
from app.wm.extractor.title_state import title_of
from app.wm.guards import is_constraint
from app.wm.items import normalise, split_items

GOAL_PREFIX: Final = "Goal:"
_REQUEST = re.compile(
    r"^(?:\d+[.)]\s*)?(?:please|can you|could you|would you|i want|i need|i['’]d like|"
    r"i would like|i['’]m looking to|i am looking to|help me|we need)\b",
    re.IGNORECASE,
)
_REQUEST_MIN_WORDS: Final = 6
_QUESTION_REQUEST_MIN_WORDS: Final = 8


def task_op(reading: Reading, prior: str, config: ExtractorConfig) -> dict[str, object]:
    candidates: list[str] = []
    if not prior:
        title, views = title_of(reading, config)
        # A constraint chosen as the title is recorded as the constraint, not also as the goal.
        if title and not reading.chat and not is_constraint_sentence(title, chat=False):
            candidates.append(reading.cite(f"{GOAL_PREFIX} {title}", *views))
    constraints: list[str] = []
    requests: list[str] = []
    for view in reading.talk:
        if view.role != "user":
            continue
        for sentence in sentences(view.text):
            if len(sentence.split()) < 3:
                continue
            if is_constraint_sentence(sentence, chat=reading.chat):
                constraints.append(reading.cite(clip(sentence, config.item_chars), view))
            elif not reading.chat and _is_request(sentence):
                requests.append(reading.cite(clip(sentence, config.item_chars), view))
    known = {_task_key(item) for item in split_items(prior)}
    fresh_constraints = _fresh(constraints, known)
    candidates += fresh_constraints[: config.task_items_per_batch]
    room = max(0, config.task_items_per_batch - len(fresh_constraints))
    candidates += _fresh(requests, known)[:room]
    fresh = _fresh(candidates, known)
    if not fresh:
        return keep_op()
    old = split_items(prior)
    if len(old) + len(fresh) <= config.task_limit_items:
        return append_op(fresh)
    return update_op(_consolidate_tasks(old, fresh, config))


_ASKING: Final = re.compile(
    r"^(?:(?:please|kindly|can you|could you|would you|will you|i need you to|i want you to|"
    r"we need you to|help me)\s+)+",
    re.IGNORECASE,
)
"""How a request is asked: "Please migrate X" and "Could you migrate X" ask for "Migrate X"."""


def _task_key(item: str) -> str:
    """Normalised equality, with a goal, the same sentence as a constraint or a request, and the
    same request asked another way ("please …", "could you …") counting as one."""
    text = item.strip()
    if text.startswith(GOAL_PREFIX):
        text = text[len(GOAL_PREFIX) :]
    return normalise(_ASKING.sub("", normalise(text)))


def _fresh(items: list[str], known: set[str]) -> list[str]:
    """Items whose key is neither known nor repeated among themselves, in order."""
    fresh: list[str] = []
    seen = set(known)
    for item in items:
        key = _task_key(item)
        if key and key not in seen:
            seen.add(key)
            fresh.append(item)
    return fresh


def _is_request(sentence: str) -> bool:
    words = len(sentence.split())
    if _REQUEST.match(sentence) is None or words < _REQUEST_MIN_WORDS:
        return False
    return not sentence.endswith("?") or words >= _QUESTION_REQUEST_MIN_WORDS


def _consolidate_tasks(old: list[str], fresh: list[str], config: ExtractorConfig) -> str:
    """Goals and every constraint stay (guard C would restore them); older requests make room."""
    pinned = [item for item in old if item.startswith(GOAL_PREFIX) or is_constraint(item)]
    others = [item for item in old if item not in pinned]
    room = max(0, config.task_limit_items - len(pinned) - len(fresh))
    kept = set(pinned) | set(others[len(others) - room :] if room else [])
    ordered = [item for item in old if item in kept] + fresh
    return "\n".join(f"- {item}" for item in ordered)
