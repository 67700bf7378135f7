"""Task & Goals: the goal, the user's constraints and requests, kept within the section's limit.

Owns which user sentences are constraints or requests and how the section is consolidated when
full (goals and every constraint stay, older requests make room). Never drops a constraint:
guard C would restore it anyway.
"""

from __future__ import annotations

import re
from typing import Final

from app.wm.extractor.arguments import append_op, keep_op, update_op
from app.wm.extractor.config import ExtractorConfig
from app.wm.extractor.reading import Reading, clip, sentences
from app.wm.extractor.title_state import title_of
from app.wm.guards import is_constraint
from app.wm.items import fresh_items, split_items

GOAL_PREFIX: Final = "Goal:"

_DIRECTIVE = re.compile(
    r"^(?:\d+[.)]\s*)?(?:(?:no|ok|okay|yes|also|and|but|so|well|remember|note)[,!.:]?\s+)?"
    r"(?:please|make sure|ensure|don['’]?t|do not|never|always|only|avoid|use|keep|stop|just)\b"
    r"|\b(?:I|we)\s+(?:(?:do not|don['’]t|never|only)\s+(?:want|need|like|use)|prefer|"
    r"would prefer|['’]d prefer|would rather|['’]d rather|must not|must never|must always)\b"
    r"|\byou\s+(?:must|should|need to|have to|can only|cannot|can['’]t|may not|are not allowed)\b",
    re.IGNORECASE,
)
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
        title = title_of(reading, config)
        if title and not reading.chat:
            candidates.append(f"{GOAL_PREFIX} {title}")
    constraints: list[str] = []
    requests: list[str] = []
    for view in reading.talk:
        if view.role != "user":
            continue
        for sentence in sentences(view.text):
            if len(sentence.split()) < 3:
                continue
            item = clip(sentence, config.item_chars)
            if is_constraint(sentence) and _DIRECTIVE.search(sentence):
                constraints.append(item)
            elif not reading.chat and _is_request(sentence):
                requests.append(item)
    limit = config.task_items_per_batch
    candidates += fresh_items(prior, constraints)[:limit]
    candidates += fresh_items(prior, requests)[: max(0, limit - len(constraints))]
    fresh = fresh_items(prior, candidates)
    if not fresh:
        return keep_op()
    old = split_items(prior)
    if len(old) + len(fresh) <= config.task_limit_items:
        return append_op(fresh)
    return update_op(_consolidate_tasks(old, fresh, config))


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
