"""``workmem wm``: the pure working-memory rules on files, for debugging guards."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from app.cli.base import (
    cli,
    echo_json,
)

wm_cli = typer.Typer(
    help="The pure working-memory rules, for debugging guards.", no_args_is_help=True
)
cli.add_typer(wm_cli, name="wm")


def read_input(path: Path | None) -> str:
    """A file's text; ``-`` reads standard input; no path is the empty document."""
    if path is None:
        return ""
    if str(path) == "-":
        return sys.stdin.read()
    if not path.is_file():
        raise typer.BadParameter(f"{path} is not a file")
    return path.read_text(encoding="utf-8")


@wm_cli.command("merge")
def wm_merge(
    ops: Annotated[
        Path, typer.Option(help="ops as JSON, or a raw tool-argument string (recovered); - = stdin")
    ],
    prior: Annotated[Path | None, typer.Option(help="prior WM Markdown; - = stdin")] = None,
) -> None:
    """Merge OPS into PRIOR under the guards; print {markdown, sections, decisions} as JSON."""
    from app.wm.debug import merge_report

    if prior is not None and str(prior) == str(ops) == "-":
        raise typer.BadParameter("only one of --prior and --ops can read standard input")
    echo_json(merge_report(read_input(prior), read_input(ops)))


@wm_cli.command("extract")
def wm_extract(
    messages: Annotated[Path, typer.Option(help="a JSON list of OpenAI-format messages")],
    prior: Annotated[Path | None, typer.Option(help="prior WM Markdown")] = None,
) -> None:
    """Print the offline extractor's ops for MESSAGES (and what merging them gives)."""
    from app.wm.debug import extract_report

    try:
        loaded = json.loads(read_input(messages))
    except ValueError as error:
        raise typer.BadParameter(f"{messages} is not JSON: {error}") from error
    if isinstance(loaded, dict) and isinstance(loaded.get("messages"), list):
        loaded = loaded["messages"]
    if not isinstance(loaded, list) or not all(isinstance(item, dict) for item in loaded):
        raise typer.BadParameter("--messages must hold a JSON list of message objects")
    echo_json(extract_report(loaded, read_input(prior)))
