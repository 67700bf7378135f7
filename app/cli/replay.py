"""``workmem replay`` and ``workmem eval``: conversations fed through the service, and the
retention evaluation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from app.cli.base import (
    cli,
    fail,
    runtime,
    upgrade_database,
    write_local_key,
)
from app.config import Settings


def _replay_client(url: str | None, key: str | None) -> Any:
    """A factory of the HTTP client a replay talks to: ``--url`` and ``--key`` for a running
    server; otherwise the service in this process on the configured database (the embedded one
    by default, with its local key)."""
    from app.replay.target import ServiceTarget, in_process, remote, unreachable

    if url is not None:
        if key is None:
            raise fail("--url needs --key: an API key of the tenant to replay into")
        target = ServiceTarget(url, key)
        problem = unreachable(target)
        if problem is not None:
            raise fail(problem, 1)
        return lambda: remote(target)
    resolved = runtime()
    if resolved.embedded is not None:
        upgrade_database(resolved)
        write_local_key(resolved.url, resolved.settings.key_file)
        key = key or resolved.settings.key_file.read_text().strip()
    elif key is None:
        raise fail("with DATABASE_URL set, --key names the tenant to replay into")
    local_key = key
    return lambda: in_process(resolved.settings, local_key)


@cli.command("replay")
def replay_command(
    file: Annotated[Path, typer.Argument(help="a conversation file (JSON or JSON lines)")],
    format: Annotated[
        str | None,
        typer.Option(
            "--format", help="openai, locomo, swe-agent or tau-bench (default: from the content)"
        ),
    ] = None,
    every: Annotated[int, typer.Option(min=1, help="commit after this many messages")] = 40,
    pending_tokens: Annotated[
        int | None, typer.Option(min=1, help="also commit once pending_tokens reaches this")
    ] = None,
    keep: Annotated[int, typer.Option(min=0, max=10_000, help="keep_recent_count")] = 10,
    only: Annotated[
        int | None, typer.Option(min=1, help="replay only the Nth conversation of the file")
    ] = None,
    chain: Annotated[
        bool, typer.Option(help="replay all conversations of the file as one agent session")
    ] = False,
    external_id: Annotated[
        str | None, typer.Option(help="external_id of the agent session")
    ] = None,
    url: Annotated[
        str | None, typer.Option(help="a running server instead of this process")
    ] = None,
    key: Annotated[str | None, typer.Option(help="API key (writer) for --url")] = None,
) -> None:
    """Feed a conversation through the service, committing every N messages (or at a
    pending_tokens threshold), then print the working memory and each archive's guard
    decisions."""
    from rich.console import Console

    from app.replay.commands import CommandFailed, ReplayRequest, conversations_of, run_replay
    from app.replay.run import Schedule

    request = ReplayRequest(
        file,
        format,
        Schedule(every=every, pending_tokens=pending_tokens, keep=keep),
        only=only,
        chain=chain,
        external_id=external_id,
    )
    try:
        conversations_of(request)  # a bad file fails before the database starts
        run_replay(request, _replay_client(url, key), Console())
    except CommandFailed as error:
        raise fail(error.message, error.code) from None


@cli.command("eval")
def eval_command(
    datasets: Annotated[
        Path | None, typer.Option(help="the datasets folder (default: ../shared/datasets)")
    ] = None,
    sets: Annotated[
        str | None,
        typer.Option(
            help="comma-separated: locomo, tau-bench, swe-agent (default all); "
            "--adversary also attacks dialogsum"
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="evaluate only the first N conversations of each set")
    ] = None,
    every: Annotated[int, typer.Option(min=1, help="commit after this many messages")] = 40,
    pending_tokens: Annotated[
        int | None, typer.Option(min=1, help="also commit once pending_tokens reaches this")
    ] = None,
    keep: Annotated[int, typer.Option(min=0, max=10_000, help="keep_recent_count")] = 10,
    budgets: Annotated[str, typer.Option(help="comma-separated token budgets")] = "2000,4000,8000",
    json_out: Annotated[Path | None, typer.Option("--json", help="write the JSON here")] = None,
    markdown_out: Annotated[
        Path | None, typer.Option("--markdown", help="write the Markdown tables here")
    ] = None,
    url: Annotated[
        str | None, typer.Option(help="evaluate a running server (default: a throwaway database)")
    ] = None,
    key: Annotated[str | None, typer.Option(help="API key (writer) for --url")] = None,
    adversary: Annotated[
        str | None,
        typer.Option(
            help="run the adversary evaluation instead: an attack class, several "
            "comma-separated, or all"
        ),
    ] = None,
) -> None:
    """The retention evaluation: replay every conversation of the shared datasets, then score
    the context (default and filled) against truncation at each budget. With --adversary, each
    attack class's hostile model instead: attacks made, caught, protected items lost."""
    from rich.console import Console

    from app.replay.commands import (
        CommandFailed,
        EvalRequest,
        adversary_classes,
        dumped,
        parse_budgets,
        run_adversary_eval,
        run_eval,
    )
    from app.replay.datasets import default_datasets_dir
    from app.replay.evaluation import EvalOptions
    from app.replay.run import Schedule
    from app.replay.target import ServiceTarget

    if url is not None and key is None:
        raise fail("--url needs --key: an API key of the tenant to evaluate in")
    console = Console(stderr=True)
    try:
        request = EvalRequest(
            datasets or default_datasets_dir(),
            EvalOptions(
                schedule=Schedule(every=every, pending_tokens=pending_tokens, keep=keep),
                budgets=parse_budgets(budgets),
            ),
            sets=None if sets is None else frozenset(p.strip() for p in sets.split(",")),
            limit=limit,
            target=None if url is None or key is None else ServiceTarget(url, key),
        )
        if adversary is not None:
            result = run_adversary_eval(
                request, adversary_classes(adversary), Settings(), console, markdown_out
            )
        else:
            result = run_eval(request, Settings(), console, markdown_out)
    except CommandFailed as error:
        raise fail(error.message, error.code) from None
    if json_out is not None:
        json_out.write_text(dumped(result) + "\n")
    else:
        typer.echo(dumped(result))
    if adversary is not None:
        tallies = [t for by_set in result["classes"].values() for t in by_set.values()]
        if any(t["caught"] < t["attacks"] or t["lost"] for t in tallies):
            console.print("adversary: some attacks got through (see 'missed')", highlight=False)
    elif not all(target["pass"] for target in result["targets"]):
        console.print("evaluation: some targets are not met (see 'targets')", highlight=False)
