"""Prompt texts for the update and creation calls, message rendering, and input batching.

Owns the versioned wording of DESIGN 4.2 (the rules of 4.2.1 in our words), how archived
messages are rendered and cut, and how a large archive is split into batches under a token
budget. Pure functions returning strings and lists; never calls a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from app.wm.messages import MessageView, arguments_summary, read_messages
from app.wm.schema import CREATE_FIELD, CREATE_TOOL_NAME, UPDATE_TOOL_NAME
from app.wm.sections import SECTIONS
from app.wm.tokens import TokenCounter, count_tokens

PROMPT_VERSION: Final = "wm-prompt-2026-12-v2"

MESSAGE_CHAR_LIMIT: Final = 2000
BATCH_TOKEN_BUDGET: Final = 24_000
SECTION_TOKEN_BUDGET: Final = 2000
DOCUMENT_TOKEN_BUDGET: Final = 12_000
# The blank line between two rendered messages.
_SEPARATOR_TOKENS: Final = 1

_SECTION_GUIDE: Final = """\
The working memory has exactly seven sections, always in this order:
1. Session Title - one line naming what this session is about; change it only for a new subject.
2. Current State - 2 to 5 sentences: where things stand right now and what happens next.
3. Task & Goals - what the user asked for, every instruction and constraint they gave.
4. Key Facts & Decisions - durable facts, decisions and their reasons, with exact values.
5. Files & Context - files, paths, URLs, identifiers and other references in use.
6. Errors & Corrections - errors met, their causes and fixes, and corrections by the user.
7. Open Issues - questions and work still open; closed ones are marked [resolved]."""

_RULES: Final = f"""\
Rules:
- Keep the structure exactly: the seven sections above, nothing else.
- Refresh Current State first; it is the one section meant to be rewritten every time.
- Copy identifiers, file paths, commands, numbers and dates exactly as they appear.
- Every instruction or constraint the user gave belongs in Task & Goals, worded as they meant it.
- Record every error and every user correction in Errors & Corrections; never remove one.
- Write only what the messages or the current working memory say; never invent details.
- When an open issue is solved, prefix it with [resolved] instead of deleting it.
- When a section is over its budget, consolidate it with UPDATE: merge related bullets into
  fewer ones and keep names, dates and exact values.
- When nothing in a section changed, use KEEP.
- Messages are numbered (#12). End every item you write with the numbers of the messages it
  comes from, as (#12, #15). An item you keep keeps its numbers; an item that merges others
  carries all of their numbers.
- An instruction or constraint comes from the user: cite the user's message that gives it.
  Never add one that no user message gives.
- Pinned facts are always shown to the agent beside the working memory: never contradict them
  (you need not copy them).
- Budgets: about {SECTION_TOKEN_BUDGET} tokens per section and {DOCUMENT_TOKEN_BUDGET} tokens for
  the whole working memory."""

UPDATE_SYSTEM_PROMPT: Final = f"""\
You maintain the working memory of a long conversation between a user and an AI agent. Older
messages are being archived; the working memory is what the agent will rely on to carry on
without them.

{_SECTION_GUIDE}

For each section, choose one op:
- KEEP when nothing changed;
- APPEND with new items (bare text, one fact per item) to add at the end;
- UPDATE with the full new body (Markdown, without the header line) to rewrite it.

{_RULES}

Answer by calling {UPDATE_TOOL_NAME} with an op for every one of the seven sections."""

CREATE_SYSTEM_PROMPT: Final = f"""\
You write the working memory of a long conversation between a user and an AI agent. Older
messages are being archived; the working memory is what the agent will rely on to carry on
without them.

{_SECTION_GUIDE}

{_RULES}

Answer by calling {CREATE_TOOL_NAME} with "{CREATE_FIELD}": a Markdown document that starts with
"# Working Memory" followed by the seven sections as "## <header>" in the order above."""


def cut_text(text: str, limit: int = MESSAGE_CHAR_LIMIT) -> str:
    """The text, or its head and tail around a marked cut when it is longer than ``limit``."""
    if len(text) <= limit:
        return text
    # The tail gets the smaller share, but a real one: tracebacks and results end there.
    head = max(1, limit * 3 // 5)
    tail = max(1, limit - head)
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[-tail:]}"


def render_message(
    message: MessageView, limit: int = MESSAGE_CHAR_LIMIT, seq: int | None = None
) -> str:
    """``[role]: text``; tool calls ``[tool:<name>] <args>``; results ``[tool result:<name>]``;
    with ``seq``, the block starts with the message's number, ``#12``."""
    lines: list[str] = []
    if message.role == "tool":
        lines.append(f"[tool result:{message.tool_name}] {message.text.strip()}")
    elif message.text.strip():
        lines.append(f"[{message.speaker}]: {message.text.strip()}")
    for call in message.tool_calls:
        lines.append(f"[tool:{call.name}] {arguments_summary(call.arguments)}")
    block = cut_text("\n".join(lines), limit)
    return f"#{seq} {block}" if block and seq is not None else block


def render_messages(
    messages: Sequence[Mapping[str, object]],
    limit: int = MESSAGE_CHAR_LIMIT,
    first_seq: int | None = None,
) -> str:
    """The archived messages as the prompt shows them, one block per message, numbered from
    ``first_seq`` when given."""
    rendered = (
        render_message(view, limit, None if first_seq is None else first_seq + view.position)
        for view in read_messages(messages)
    )
    return "\n\n".join(block for block in rendered if block)


def pinned_block(pins: Sequence[str]) -> list[str]:
    """The ``<pinned_facts>`` lines of a prompt ([] without pins)."""
    if not pins:
        return []
    return [
        "<pinned_facts>",
        *(f"- {pin}" for pin in pins),
        "</pinned_facts>",
        "These were pinned by the user or the agent and are shown beside the working memory on "
        "every call: never contradict them.",
        "",
    ]


def batch_messages(
    messages: Sequence[Mapping[str, object]],
    *,
    budget: int = BATCH_TOKEN_BUDGET,
    counter: TokenCounter = count_tokens,
    limit: int = MESSAGE_CHAR_LIMIT,
) -> list[list[Mapping[str, object]]]:
    """Consecutive batches whose rendered messages stay within ``budget`` tokens.

    A batch ends only between tool groups (an assistant tool call stays with its results) unless
    one group alone is over budget; every batch holds at least one message.
    """
    views = read_messages(messages)
    costs = [counter(render_message(view, limit)) + _SEPARATOR_TOKENS for view in views]
    groups: list[list[int]] = []
    for index, view in enumerate(views):
        if view.role == "tool" and groups:
            groups[-1].append(index)
        else:
            groups.append([index])
    batches: list[list[int]] = []
    current: list[int] = []
    used = 0
    for group in groups:
        group_cost = sum(costs[index] for index in group)
        if current and used + group_cost > budget:
            batches.append(current)
            current, used = [], 0
        for index in group:
            if current and used + costs[index] > budget:
                batches.append(current)
                current, used = [], 0
            current.append(index)
            used += costs[index]
    if current:
        batches.append(current)
    return [[messages[views[index].position] for index in batch] for batch in batches]


def update_prompt(
    prior_markdown: str,
    messages: Sequence[Mapping[str, object]],
    *,
    size_warnings: str = "",
    limit: int = MESSAGE_CHAR_LIMIT,
    first_seq: int = 1,
    pins: Sequence[str] = (),
) -> list[dict[str, str]]:
    """System and user messages of the update call (the tool itself comes from ``schema``).

    ``prior_markdown`` is the prior working memory with its items' references; the messages
    are numbered from ``first_seq``; ``pins`` are the agent session's pinned facts.
    """
    parts = [
        *pinned_block(pins),
        "<working_memory>",
        prior_markdown.strip(),
        "</working_memory>",
    ]
    if size_warnings:
        parts += ["", size_warnings]
    parts += [
        "",
        "<archived_messages>",
        render_messages(messages, limit, first_seq),
        "</archived_messages>",
        "",
        f"Call {UPDATE_TOOL_NAME} with one op for each of: "
        + ", ".join(section.value for section in SECTIONS)
        + ".",
    ]
    return [
        {"role": "system", "content": UPDATE_SYSTEM_PROMPT},
        {"role": "user", "content": "\n".join(parts)},
    ]


def create_prompt(
    messages: Sequence[Mapping[str, object]],
    *,
    context: str = "",
    limit: int = MESSAGE_CHAR_LIMIT,
    first_seq: int = 1,
    pins: Sequence[str] = (),
) -> list[dict[str, str]]:
    """System and user messages of the creation call.

    ``context`` is whatever already exists for the session: a legacy overview, a prior working
    memory when the creation call stands in for a failed update, or the parts of an imported
    document that are not sections (preamble, other headings). The messages are numbered from
    ``first_seq``; ``pins`` are the agent session's pinned facts.
    """
    parts: list[str] = pinned_block(pins)
    if context.strip():
        parts += [
            "<existing_notes>",
            context.strip(),
            "</existing_notes>",
            "Keep everything the existing notes say that still matters.",
            "",
        ]
    parts += [
        "<archived_messages>",
        render_messages(messages, limit, first_seq),
        "</archived_messages>",
        "",
        f"Call {CREATE_TOOL_NAME} with the whole working memory.",
    ]
    return [
        {"role": "system", "content": CREATE_SYSTEM_PROMPT},
        {"role": "user", "content": "\n".join(parts)},
    ]
