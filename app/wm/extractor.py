"""The offline extractor: deterministic update arguments from archived messages and the prior WM.

Owns the rules of DESIGN 4.1: what each section takes from the messages, how it stays within
budget (consolidating in ways the guards accept), when an open question counts as answered.
Never applies ops: its output goes through exactly the same merge and guards as a model's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from app.wm.anchors import anchor_spans, anchors, title_words
from app.wm.guards import SENTINEL, is_constraint, without_sentinel
from app.wm.items import Marker, fresh_items, is_heading, markers_of, split_items, strip_bullet
from app.wm.messages import MessageView, read_messages
from app.wm.ops import OpKind
from app.wm.paths import find_paths
from app.wm.sections import SECTIONS, Section
from app.wm.tokens import TokenCounter, count_tokens


@dataclass(frozen=True, slots=True)
class ExtractorConfig:
    """How much the extractor takes per batch and where it starts consolidating.

    The consolidation points sit below the guard and warning thresholds (25 items, 1500 tokens)
    so that the extractor's own output never needs a size reminder.
    """

    title_chars: int = 90
    item_chars: int = 280
    tool_fact_chars: int = 320
    state_chars: int = 220
    key_facts_per_batch: int = 8
    key_facts_minimum: int = 2
    key_facts_limit_items: int = 20
    key_facts_limit_tokens: int = 1100
    digest_anchors_per_line: int = 30
    task_items_per_batch: int = 4
    task_limit_items: int = 16
    files_per_batch: int = 10
    files_limit_items: int = 20
    files_per_packed_line: int = 4
    errors_per_batch: int = 6
    issues_per_batch: int = 3


DEFAULT_EXTRACTOR_CONFIG: Final = ExtractorConfig()

DIGEST_PREFIX: Final = "Earlier facts:"
GOAL_PREFIX: Final = "Goal:"
TODO_PREFIX: Final = "TODO:"
QUESTION_PREFIX: Final = "Question from "

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_ISSUE = re.compile(r"ISSUE:\s*\n\s*(\S[^\n]*)")
_GREETING = re.compile(
    r"^(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening)|thanks|thank you|greetings)\b",
    re.IGNORECASE,
)
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
_LEADING_MARKUP = re.compile(r"^(?:[-*+]\s+|\d{1,3}[.)]\s+|#+\s+|>\s*)+")
_RELATIVE_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|this (?:morning|week|weekend|month|year)|"
    r"(?:last|this|next) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"last (?:night|week|weekend|month|year)|next (?:week|weekend|month|year)|recently|"
    r"\d+ (?:days?|weeks?|months?|years?) ago|ago)\b",
    re.IGNORECASE,
)
_SESSION_DATE = re.compile(
    r"\b(\d{1,2}\s+(?:January|February|March|April|May|June|July|August|September|October|"
    r"November|December),?\s+\d{4})\b|\b(\d{4}-\d{2}-\d{2})\b"
)
_ERROR_NAME = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b(?::|\s*$)")
_ERROR_START = re.compile(r"^\s*(?:error|fatal|failed|failure|traceback)\b", re.IGNORECASE)
_FAILED = re.compile(r"\bfailed\b", re.IGNORECASE)
_CODE_LISTING = re.compile(r"^\s*\d+:")
_CORRECTION = re.compile(
    r"^(?:no[,.!]|nope\b|actually[,\s]|that['’]s (?:wrong|not (?:right|correct|what))|"
    r"that is (?:wrong|not (?:right|correct|what))|wrong[,.!]|not quite|i said\b|i meant\b|"
    r"you misunderstood)",
    re.IGNORECASE,
)
_TODO = re.compile(r"\b(?:TODO|FIXME)\b")
_COMPLETION = re.compile(
    r"\b(?:done|fixed|resolved|completed|implemented|finished|submitted)\b", re.IGNORECASE
)
_IDENTIFIER = re.compile(r"[\w.:/@+#-]{2,64}")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_BACKTICKED = re.compile(r"`([^`]+)`")
_RESULT_KEYS = re.compile(r"(?:^|_)(?:id|number|status|code)$")
_SKIPPED_TOOLS: Final = frozenset({"think"})
_FILE_LINE = re.compile(r"\bfile\b", re.IGNORECASE)
_FOCUSED_OUTPUT_PATHS: Final = 3
_TOOL_FACT_SCORE: Final = 100
_FACT_MIN_WORDS: Final = 4
_STATEMENT_MIN_WORDS: Final = 7


def extract_ops(
    messages: Sequence[Mapping[str, object]],
    prior: Mapping[Section, str] | None = None,
    *,
    counter: TokenCounter = count_tokens,
    config: ExtractorConfig = DEFAULT_EXTRACTOR_CONFIG,
) -> dict[str, object]:
    """``update_working_memory`` arguments for these messages, valid under the tool schema."""
    bodies = {section: (prior or {}).get(section, "").strip() for section in SECTIONS}
    views = [view for view in read_messages(messages) if view.text.strip() or view.tool_calls]
    reading = _Reading(views)
    sections = {
        Section.SESSION_TITLE: _title_op(reading, bodies[Section.SESSION_TITLE], config),
        Section.CURRENT_STATE: _state_op(reading, config),
        Section.TASK_AND_GOALS: _task_op(reading, bodies[Section.TASK_AND_GOALS], config),
        Section.KEY_FACTS: _key_facts_op(reading, bodies[Section.KEY_FACTS], counter, config),
        Section.FILES: _files_op(reading, bodies[Section.FILES], config),
        Section.ERRORS: _errors_op(reading, bodies[Section.ERRORS], config),
        Section.OPEN_ISSUES: _issues_op(reading, bodies[Section.OPEN_ISSUES], config),
    }
    return {"sections": {section.value: sections[section] for section in SECTIONS}}


# Shared reading of the batch -------------------------------------------------------------------


class _Reading:
    """What every section rule needs to know about the batch, computed once."""

    def __init__(self, views: list[MessageView]) -> None:
        self.views = views
        self.talk = [v for v in views if v.role in ("user", "assistant") and v.text.strip()]
        # Results are matched to the latest open call with their id, not by id alone: some
        # agents reuse a call id within one conversation.
        self.results: dict[tuple[int, int], MessageView] = {}
        open_calls: dict[str, tuple[int, int]] = {}
        for index, view in enumerate(views):
            for number, call in enumerate(view.tool_calls):
                open_calls[call.call_id] = (index, number)
            if view.role == "tool" and view.tool_call_id in open_calls:
                self.results[open_calls.pop(view.tool_call_id)] = view
        self.has_tools = any(v.tool_calls or v.role == "tool" for v in views)
        named = [v.speaker for v in self.talk if v.speaker not in ("user", "assistant")]
        self.speakers = list(dict.fromkeys(named))
        self.speaker_words = frozenset(name.lower() for name in self.speakers)
        self.chat = len(self.speakers) >= 2 and not self.has_tools
        # The date in force at each message: the latest one a system message gave (a session
        # header, "the current time is ..."), never a date someone merely talked about.
        self.dates: list[str] = []
        latest = ""
        for view in views:
            if view.role == "system":
                latest = _session_date(view.text) or latest
            self.dates.append(latest)

    def date_before(self, index: int) -> str:
        return self.dates[index]


def _session_date(text: str) -> str:
    match = _SESSION_DATE.search(text)
    if match is None:
        return ""
    return " ".join((match.group(1) or match.group(2)).replace(",", "").split())


def _keep() -> dict[str, object]:
    return {"op": OpKind.KEEP.value}


def _update(content: str) -> dict[str, object]:
    return {"op": OpKind.UPDATE.value, "content": content}


def _append(items: Iterable[str]) -> dict[str, object]:
    return {"op": OpKind.APPEND.value, "items": list(items)}


def clip(text: str, limit: int) -> str:
    """The text on one line, cut at a word boundary with an ellipsis when over ``limit``."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[: limit - 1]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:") + "…"


def sentences(text: str) -> list[str]:
    """Sentences and lines of a text, without list markers and bold markup."""
    found: list[str] = []
    for line in text.splitlines():
        # List markers go before splitting, or "1. Second." would split after "1.".
        line = _LEADING_MARKUP.sub("", line.replace("**", "").strip())
        for part in _SENTENCE_END.split(line):
            sentence = " ".join(part.split())
            if sentence:
                found.append(sentence)
    return found


def _is_greeting(sentence: str) -> bool:
    return _GREETING.match(sentence) is not None and len(sentence.split()) <= 6


def _label(view: MessageView) -> str:
    return view.speaker if view.speaker not in ("user", "assistant") else view.role.capitalize()


# Session Title ---------------------------------------------------------------------------------


def _title_op(reading: _Reading, prior: str, config: ExtractorConfig) -> dict[str, object]:
    if prior:
        return _keep()
    title = _title(reading, config)
    return _update(title) if title else _keep()


def _title(reading: _Reading, config: ExtractorConfig) -> str:
    users = [v for v in reading.talk if v.role == "user"]
    for view in users:
        issue = _ISSUE.search(view.text)
        if issue is not None:
            return clip(issue.group(1).strip(" #*"), config.title_chars)
    if reading.chat:
        return f"Conversation between {reading.speakers[0]} and {reading.speakers[1]}"
    for view in users or reading.talk:
        for sentence in sentences(view.text):
            if not _is_greeting(sentence) and len(sentence.split()) >= 3:
                return clip(sentence.rstrip(".!?。！？ "), config.title_chars)
    return ""


# Current State ---------------------------------------------------------------------------------


def _state_op(reading: _Reading, config: ExtractorConfig) -> dict[str, object]:
    lines: list[str] = []
    date = reading.date_before(len(reading.views) - 1) if reading.views else ""
    if date:
        lines.append(f"Latest session date: {date}.")
    last_user = next((v for v in reversed(reading.talk) if v.role == "user"), None)
    last_reply = next((v for v in reversed(reading.talk) if v.role == "assistant"), None)
    if last_user is not None:
        lines.append(f"Latest from {_label(last_user)}: {clip(last_user.text, config.state_chars)}")
    if last_reply is not None:
        lines.append(
            f"Latest from {_label(last_reply)}: {clip(last_reply.text, config.state_chars)}"
        )
    last_call = next(
        (
            (index, number, call)
            for index in reversed(range(len(reading.views)))
            for number, call in reversed(list(enumerate(reading.views[index].tool_calls)))
            if call.name not in _SKIPPED_TOOLS
        ),
        None,
    )
    if last_call is not None:
        index, number, call = last_call
        line = f"Last tool call: {_call_summary(call.name, call.arguments, 160)}"
        result = reading.results.get((index, number))
        if result is not None:
            line += f" returned: {_result_summary(result.text, 120)}"
        lines.append(line)
    if not lines:
        return _keep()
    return _update("\n".join(lines))


# Task & Goals ----------------------------------------------------------------------------------


def _task_op(reading: _Reading, prior: str, config: ExtractorConfig) -> dict[str, object]:
    candidates: list[str] = []
    if not prior:
        title = _title(reading, config)
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
        return _keep()
    old = split_items(prior)
    if len(old) + len(fresh) <= config.task_limit_items:
        return _append(fresh)
    return _update(_consolidate_tasks(old, fresh, config))


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


# Key Facts & Decisions -------------------------------------------------------------------------


def _key_facts_op(
    reading: _Reading, prior: str, counter: TokenCounter, config: ExtractorConfig
) -> dict[str, object]:
    candidates = _fact_candidates(reading, config)
    fresh = set(fresh_items(prior, [fact for _, _, fact in candidates]))
    ranked = sorted(
        (entry for entry in candidates if entry[2] in fresh and entry[0] > 0),
        key=lambda entry: (-entry[0], entry[1]),
    )
    chosen = ranked[: config.key_facts_per_batch]
    if len(chosen) < config.key_facts_minimum:
        # A short exchange without names, dates or numbers still has a point: keep its most
        # substantial statements rather than nothing.
        plain = sorted(
            (e for e in candidates if e[2] in fresh and e[0] == 0 and _is_statement(e[2])),
            key=lambda entry: (-len(entry[2]), entry[1]),
        )
        chosen += plain[: config.key_facts_minimum - len(chosen)]
    facts = list(dict.fromkeys(fact for _, _, fact in sorted(chosen, key=lambda e: e[1])))
    old = split_items(without_sentinel(prior))
    over = SENTINEL in prior or len(old) + len(facts) > config.key_facts_limit_items
    if not over:
        body = "\n".join(f"- {item}" for item in [*old, *facts])
        over = counter(body) > config.key_facts_limit_tokens
    if not over:
        return _append(facts) if facts else _keep()
    return _update(_consolidate_facts(old, facts, counter, config))


def _fact_candidates(reading: _Reading, config: ExtractorConfig) -> list[tuple[int, int, str]]:
    """Every possible fact as ``(score, order, text)``; tool calls outrank statements."""
    found: list[tuple[int, int, str]] = []
    order = 0
    for index, view in enumerate(reading.views):
        for number, call in enumerate(view.tool_calls):
            if call.name in _SKIPPED_TOOLS:
                continue
            fact = _call_summary(call.name, call.arguments, config.tool_fact_chars)
            result = reading.results.get((index, number))
            if result is not None and result.text.strip():
                fact += f" → {_result_summary(result.text, 100)}"
            found.append((_TOOL_FACT_SCORE, order, fact))
            order += 1
        if view.role not in ("user", "assistant"):
            continue
        date = reading.date_before(index)
        for sentence in sentences(view.text):
            if len(sentence.split()) < _FACT_MIN_WORDS or _is_greeting(sentence):
                continue
            score = _fact_score(sentence, reading.speaker_words)
            fact = sentence
            if date and _RELATIVE_TIME.search(sentence):
                fact = f"{fact} (said on {date})"
                score += 1
            if view.speaker != "assistant":
                fact = f"{_label(view)}: {fact}"
            found.append((score if score >= 2 else 0, order, clip(fact, config.item_chars)))
            order += 1
    return found


def _is_statement(fact: str) -> bool:
    return not fact.endswith(("?", "？")) and len(fact.split()) >= _STATEMENT_MIN_WORDS


def _fact_score(sentence: str, speaker_words: frozenset[str]) -> int:
    keys = {span.key for span in anchor_spans(sentence) if span.key not in speaker_words}
    return len(keys) + (1 if any(char.isdigit() for char in sentence) else 0)


_PACK_SEPARATOR: Final = " | "
_DIGEST_PRIORITY: Final = {
    "decision": 0,
    "proper_noun": 1,
    "clock": 2,
    "quantity": 3,
    "version": 4,
    "identifier": 5,
    "amount": 6,
    "date": 7,
}


def _consolidate_facts(
    old: list[str], fresh: list[str], counter: TokenCounter, config: ExtractorConfig
) -> str:
    """A consolidation guard B accepts: pack older facts, then fold the oldest into a digest.

    Packing joins up to three older facts per line, which keeps every word and anchor. Only if
    the section is still over its token limit are the oldest lines folded into ``Earlier
    facts:``, which keeps their anchors (names, dates, amounts, identifiers) but not their
    wording; and only if that digest alone is too large are its least specific anchors dropped,
    never below a coverage comfortably above the guard's threshold.
    """
    digest: dict[str, tuple[str, str]] = {}
    plain: list[str] = []
    for item in old:
        if item.startswith(DIGEST_PREFIX):
            _fold(digest, item[len(DIGEST_PREFIX) :])
        else:
            plain.append(item)
    # Room for the fresh facts and for the digest lines that folding may add or lengthen.
    digest_lines = len(digest) // config.digest_anchors_per_line + 2
    target = max(1, config.key_facts_limit_items - len(fresh) - digest_lines)
    packed = _pack(plain, target)

    def render() -> str:
        entries = list(digest.values())
        size = config.digest_anchors_per_line
        lines = [
            f"{DIGEST_PREFIX} " + "; ".join(surface for surface, _ in entries[start : start + size])
            for start in range(0, len(entries), size)
        ]
        return "\n".join(f"- {line}" for line in [*lines, *packed, *fresh])

    content = render()
    while packed and counter(content) > config.key_facts_limit_tokens:
        _fold(digest, packed.pop(0))
        content = render()
    old_anchors = anchors("\n".join(old))
    kept = anchors("\n".join([*packed, *fresh]))
    while digest and counter(content) > config.key_facts_limit_tokens:
        victims = sorted(digest, key=lambda key: _DIGEST_PRIORITY[digest[key][1]])
        victim = victims[0]
        remaining = (set(digest) - {victim}) | kept
        if old_anchors and len(old_anchors & remaining) * 4 < 3 * len(old_anchors):
            break
        del digest[victim]
        content = render()
    return content


def _fold(digest: dict[str, tuple[str, str]], text: str) -> None:
    for span in anchor_spans(text):
        digest.setdefault(span.key, (span.surface, span.kind))


def _pack(items: list[str], target: int) -> list[str]:
    lines = list(items)
    index = 0
    while len(lines) > target and index < len(lines) - 1:
        if lines[index].count(_PACK_SEPARATOR) < 2:
            lines[index] = lines[index] + _PACK_SEPARATOR + lines.pop(index + 1)
        else:
            index += 1
    return lines


def _call_summary(name: str, arguments: str, limit: int) -> str:
    """``name``(arguments); when they are too long, their identifiers come first so they stay."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        parsed = arguments
    flat = _flatten(parsed)
    if len(flat) > limit:
        identifiers = list(dict.fromkeys(_BACKTICKED.findall(flat)))
        if identifiers:
            flat = ", ".join(f"`{value}`" for value in identifiers) + "; " + flat
    return f"`{name}`({clip(flat, limit)})"


def _flatten(value: object, key: str = "") -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{name} {_flatten(inner, str(name))}" for name, inner in value.items())
    if isinstance(value, list):
        return "[" + "; ".join(_flatten(inner, key) for inner in value) + "]"
    if isinstance(value, str):
        return _show_value(value, key)
    return json.dumps(value)


def _show_value(value: str, key: str) -> str:
    """A string value; identifiers go in backticks, which makes them Key Facts anchors."""
    text = " ".join(value.split())
    looks_like_identifier = _IDENTIFIER.fullmatch(text) is not None and (
        _RESULT_KEYS.search(key.lower()) is not None
        or (
            any(char.isdigit() or char == "_" for char in text)
            and not text.isdigit()
            and _ISO_DATE.fullmatch(text) is None
        )
    )
    return f"`{text}`" if looks_like_identifier else text


def _result_summary(text: str, limit: int) -> str:
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, Mapping):
        scalars = {
            key: value for key, value in parsed.items() if not isinstance(value, Mapping | list)
        }
        picked = {key: value for key, value in scalars.items() if _RESULT_KEYS.search(key)}
        return clip(_flatten(picked or dict(list(scalars.items())[:3])), limit)
    if isinstance(parsed, list):
        return f"{len(parsed)} results"
    first = next((line for line in text.splitlines() if line.strip()), "")
    return clip(first, limit)


# Files & Context -------------------------------------------------------------------------------


def _files_op(reading: _Reading, prior: str, config: ExtractorConfig) -> dict[str, object]:
    known = set(find_paths(prior))
    chosen: dict[str, str] = {}
    for path, source in _path_mentions(reading):
        if _is_noise_path(path) or _already_known(path, known | set(chosen)):
            continue
        chosen[path] = source
    fresh = fresh_items(prior, [f"{path} ({source})" for path, source in chosen.items()])
    fresh = fresh[: config.files_per_batch]
    if not fresh:
        return _keep()
    old = split_items(prior)
    if len(old) + len(fresh) <= config.files_limit_items:
        return _append(fresh)
    return _update(_pack_files(old, fresh, config))


def _path_mentions(reading: _Reading) -> Iterable[tuple[str, str]]:
    for view in reading.views:
        if view.role in ("user", "assistant"):
            for path in find_paths(view.text):
                yield path, f"mentioned by {_label(view)}"
        for call in view.tool_calls:
            try:
                decoded = _flatten(json.loads(call.arguments))
            except (ValueError, RecursionError):
                decoded = call.arguments
            for path in find_paths(decoded):
                yield path, f"used by {call.name}"
        if view.role == "tool":
            paths = find_paths(view.text)
            if len(paths) > _FOCUSED_OUTPUT_PATHS:
                # A listing (ls, pip, a search over many files) is noise: only lines that name
                # a file on purpose (an opened file, a traceback frame) count.
                paths = [
                    path
                    for line in view.text.splitlines()
                    if _FILE_LINE.search(line)
                    for path in find_paths(line)
                ]
            for path in paths:
                yield path, f"seen in {view.tool_name} output"


def _is_noise_path(path: str) -> bool:
    segments = [segment for segment in re.split(r"[/\\]", path) if segment]
    return all(len(segment) <= 2 for segment in segments) or "site-packages" in path


def _already_known(path: str, known: set[str]) -> bool:
    return any(other == path or other.endswith("/" + path.lstrip("/")) for other in known)


def _pack_files(old: list[str], fresh: list[str], config: ExtractorConfig) -> str:
    """Fewer, longer lines with every path still in them (guard D rejects any lost path)."""
    size = config.files_per_packed_line
    lines = ["; ".join(old[start : start + size]) for start in range(0, len(old), size)]
    return "\n".join(f"- {line}" for line in [*lines, *fresh])


# Errors & Corrections --------------------------------------------------------------------------


def _errors_op(reading: _Reading, prior: str, config: ExtractorConfig) -> dict[str, object]:
    found: list[str] = []
    previous: MessageView | None = None
    for view in reading.views:
        if view.role == "tool":
            for line in _error_lines(view.text, tool_output=True):
                found.append(f"{view.tool_name}: {clip(line, config.item_chars)}")
        elif view.role == "user" and view.text.strip():
            for line in _error_lines(view.text, tool_output=False):
                found.append(f"{_label(view)} reported: {clip(line, config.item_chars)}")
            if _is_correction(view, previous):
                first = " ".join(sentences(view.text)[:2])
                found.append(f"Correction from {_label(view)}: {clip(first, config.item_chars)}")
        if view.role in ("user", "assistant") and view.text.strip():
            previous = view
    fresh = fresh_items(prior, found)[: config.errors_per_batch]
    return _append(fresh) if fresh else _keep()


def _error_lines(text: str, *, tool_output: bool) -> list[str]:
    lines: list[str] = []
    for line in text.splitlines():
        stripped = _LEADING_MARKUP.sub("", line.strip())
        if not stripped or _CODE_LISTING.match(stripped):
            continue
        if _ERROR_NAME.search(stripped) or (
            tool_output and (_ERROR_START.match(stripped) or _FAILED.search(stripped))
        ):
            lines.append(stripped)
    return lines


def _is_correction(view: MessageView, previous: MessageView | None) -> bool:
    if previous is None or previous.role != "assistant":
        return False
    if previous.text.rstrip().endswith("?"):
        # "No, ..." after a question is an answer, not a correction.
        return False
    return _CORRECTION.match(view.text.strip()) is not None


# Open Issues -----------------------------------------------------------------------------------


def _issues_op(reading: _Reading, prior: str, config: ExtractorConfig) -> dict[str, object]:
    new = _new_issues(reading, config)
    spoke = {_label(view) for view in reading.talk}
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
        return _update(content)
    return _append(fresh) if fresh else _keep()


def _new_issues(reading: _Reading, config: ExtractorConfig) -> list[str]:
    issues: list[str] = []
    for view in reading.talk:
        for line in view.text.splitlines():
            if _TODO.search(line):
                issues.append(f"{TODO_PREFIX} {clip(_TODO.sub('', line).strip(' :-'), 200)}")
    if reading.talk:
        last = reading.talk[-1]
        for sentence in sentences(last.text):
            if sentence.endswith(("?", "？")) and len(sentence.split()) >= 3:
                issues.append(f"{QUESTION_PREFIX}{_label(last)}: {clip(sentence, 200)}")
    return issues


def _is_answered(item: str, spoke: set[str], reading: _Reading) -> bool:
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
