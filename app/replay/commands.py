"""What ``workmem replay`` and ``workmem eval`` do, once the command line is parsed.

Owns reading the files and the options into work (which conversations, which schedule, which
budgets), running it against the service the caller connects to, and the one-line reasons a run
cannot start or stops (``CommandFailed``). Never parses arguments or resolves the database: the
command line (``app.cli``) does both and hands over a client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console

from app.config import Settings
from app.llm.adversary import AttackClass
from app.replay import formats, report
from app.replay.adversary import AdversaryRun, run_adversary
from app.replay.console import ReplayProgress, render_replayed
from app.replay.evaluation import EvalOptions
from app.replay.run import ReplayError, Schedule, replay
from app.replay.suite import NoDatasets, SuiteRun, run_on_throwaway, run_suite
from app.replay.target import ServiceTarget, remote, unreachable

ClientFactory = Callable[[], AbstractAsyncContextManager[httpx.AsyncClient]]


class CommandFailed(Exception):
    """A reason to stop, for one line on standard error, and the exit status."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True, slots=True)
class ReplayRequest:
    file: Path
    format: str | None
    schedule: Schedule
    only: int | None = None
    chain: bool = False
    external_id: str | None = None


def conversations_of(request: ReplayRequest) -> list[formats.Conversation]:
    try:
        chosen = None if request.format is None else formats.ReplayFormat(request.format)
    except ValueError:
        known = ", ".join(f.value for f in formats.ReplayFormat)
        raise CommandFailed(f"--format must be one of {known}") from None
    try:
        conversations = formats.read_conversations(request.file, chosen)
    except formats.UnreadableConversation as error:
        raise CommandFailed(str(error)) from None
    if request.only is not None:
        if request.only > len(conversations):
            raise CommandFailed(
                f"--only {request.only}: {request.file} holds {len(conversations)} conversation(s)"
            )
        conversations = [conversations[request.only - 1]]
    if request.chain:
        conversations = [formats.chain(request.file.stem, conversations)]
    if request.external_id is not None and len(conversations) > 1:
        raise CommandFailed("--external-id names one agent session: add --only N or --chain")
    return conversations


def run_replay(request: ReplayRequest, connect: ClientFactory, console: Console) -> None:
    """Replay every conversation of the file, each into an agent session of its own (or all
    of them into one, chained), printing each one's working memory and decisions."""
    conversations = conversations_of(request)

    async def work() -> None:
        async with connect() as http:
            for conversation in conversations:
                label = f"replaying {conversation.name[:40]}"
                with ReplayProgress(console, len(conversation.messages), label) as progress:
                    replayed = await replay(
                        http,
                        conversation,
                        request.schedule,
                        progress=progress,
                        external_id=request.external_id,
                    )
                render_replayed(console, replayed)

    try:
        asyncio.run(work())
    except ReplayError as error:
        raise CommandFailed(str(error), code=1) from None
    except httpx.TransportError as error:
        raise CommandFailed(lost(error), code=1) from None
    except KeyboardInterrupt:
        raise CommandFailed(
            "interrupted; what was appended and committed so far is kept", 130
        ) from None


@dataclass(frozen=True, slots=True)
class EvalRequest:
    root: Path
    options: EvalOptions
    sets: frozenset[str] | None = None
    limit: int | None = None
    target: ServiceTarget | None = None
    """A running server to evaluate; ``None`` for a throwaway database in this process."""


def parse_budgets(text: str) -> tuple[int, ...]:
    try:
        budgets = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise CommandFailed("--budgets takes whole numbers separated by commas") from None
    if not budgets or min(budgets) < 1:
        raise CommandFailed("--budgets takes whole numbers above 0")
    return budgets


def run_eval(
    request: EvalRequest, settings: Settings, console: Console, markdown: Path | None
) -> dict[str, Any]:
    """The evaluation's JSON document (and its Markdown tables written to ``markdown``)."""
    target = request.target
    generator = (
        f"server at {target.base_url}"
        if target is not None
        else ("openai" if settings.use_openai else "offline")
    )

    async def work() -> SuiteRun:
        if target is None:
            return await run_on_throwaway(
                settings,
                request.root,
                request.options,
                console,
                sets=request.sets,
                limit=request.limit,
            )
        async with remote(target) as http:
            return await run_suite(
                http,
                request.root,
                request.options,
                console,
                sets=request.sets,
                limit=request.limit,
            )

    if target is not None and (problem := unreachable(target)) is not None:
        raise CommandFailed(problem, code=1)
    try:
        run = asyncio.run(work())
    except (NoDatasets, ReplayError) as error:
        raise CommandFailed(str(error), code=1) from None
    except httpx.TransportError as error:
        raise CommandFailed(lost(error), code=1) from None
    budgets = request.options.budgets
    if markdown is not None:
        markdown.write_text(report.as_markdown(run.results, budgets, f"Retention ({generator})"))
    return report.as_json(run.results, budgets, run.header(generator, request.options))


def adversary_classes(text: str) -> list[AttackClass]:
    """``all`` or comma-separated attack class names."""
    if text.strip() == "all":
        return list(AttackClass)
    try:
        return [AttackClass(part.strip()) for part in text.split(",") if part.strip()]
    except ValueError:
        known = ", ".join(kind.value for kind in AttackClass)
        raise CommandFailed(f"--adversary takes all or one or more of: {known}") from None


def run_adversary_eval(
    request: EvalRequest,
    classes: list[AttackClass],
    settings: Settings,
    console: Console,
    markdown: Path | None,
) -> dict[str, Any]:
    """The adversary evaluation's JSON document (and its table written to ``markdown``)."""
    if request.target is not None:
        raise CommandFailed("--adversary runs its own service in this process: drop --url")
    if not classes:
        raise CommandFailed("--adversary names no attack class")

    async def work() -> AdversaryRun:
        return await run_adversary(
            settings,
            request.root,
            classes,
            console,
            schedule=request.options.schedule,
            sets=request.sets,
            limit=request.limit,
        )

    try:
        run = asyncio.run(work())
    except (NoDatasets, ReplayError) as error:
        raise CommandFailed(str(error), code=1) from None
    if markdown is not None:
        markdown.write_text(run.as_markdown())
    return run.as_json()


def dumped(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False)


def lost(error: httpx.TransportError) -> str:
    """The server stopped answering midway: what was stored so far is kept."""
    said = str(error) or type(error).__name__
    return f"lost the server midway ({said}); what was appended and committed so far is kept"
