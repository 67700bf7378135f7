"""The retention evaluation (DESIGN 17) with both generators, each on a fresh embedded database.

Runs ``workmem eval``'s evaluation twice: with the offline extractor, and with an adversarial
scripted model (``tests/support/adversary.py``) served by the local OpenAI-compatible server and
reached through the real ``openai`` SDK. Prints one JSON document ``{"offline": …,
"adversarial": …}``; ``--markdown`` writes both runs' tables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from rich.console import Console

from app.config import Settings
from app.replay import report
from app.replay.datasets import default_datasets_dir
from app.replay.evaluation import EvalOptions
from app.replay.run import Schedule
from app.replay.suite import SuiteRun, run_on_throwaway
from tests.support.adversary import ATTACK_NAMES, Adversary
from tests.support.fake_openai import FakeOpenAI


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--datasets", type=Path, default=default_datasets_dir())
    parser.add_argument("--sets", default=None, help="comma-separated set names (default all)")
    parser.add_argument("--limit", type=int, default=None, help="conversations per set")
    parser.add_argument("--every", type=int, default=40)
    parser.add_argument("--keep", type=int, default=10)
    parser.add_argument("--markdown", type=Path, default=None)
    parser.add_argument(
        "--generators", default="offline,adversarial", help="offline, adversarial or both"
    )
    parser.add_argument(
        "--features",
        action="store_true",
        help="also score each context with tool-result clearing on and with a pin",
    )
    parser.add_argument("--clear-keep", type=int, default=3)
    return parser.parse_args()


async def evaluate_both(arguments: argparse.Namespace, console: Console) -> dict[str, Any]:
    options = EvalOptions(
        schedule=Schedule(every=arguments.every, keep=arguments.keep),
        features=arguments.features,
        clear_keep=arguments.clear_keep,
    )
    sets = None if arguments.sets is None else frozenset(arguments.sets.split(","))
    wanted = set(arguments.generators.split(","))
    runs: dict[str, tuple[SuiteRun, dict[str, Any]]] = {}
    if "offline" in wanted:
        console.print("retention: offline extractor", highlight=False)
        run = await run_on_throwaway(
            Settings(llm_provider="offline"),
            arguments.datasets,
            options,
            console,
            sets=sets,
            limit=arguments.limit,
        )
        runs["offline"] = (run, run.header("offline", options))
    if "adversarial" in wanted:
        console.print("retention: adversarial scripted model", highlight=False)
        adversary = Adversary()
        with FakeOpenAI(default_reply=adversary.reply) as server:
            settings = Settings(
                llm_provider="openai",
                llm_base_url=server.base_url,
                llm_api_key=SecretStr("adversary"),
                llm_model="adversary",
                llm_max_retries=0,
                llm_timeout_s=30,
            )
            run = await run_on_throwaway(
                settings, arguments.datasets, options, console, sets=sets, limit=arguments.limit
            )
            errors = server.errors
        header = run.header("adversarial scripted model", options)
        header["adversary"] = {
            "model_calls": adversary.calls,
            "attacks": adversary.attacks,
            "constraints_invented": adversary.invented,
            "attack_cycle": list(ATTACK_NAMES),
            "server_errors": errors,
        }
        runs["adversarial"] = (run, header)
    if arguments.markdown is not None:
        arguments.markdown.write_text(
            "\n".join(
                report.as_markdown(run.results, options.budgets, f"Retention ({name})")
                for name, (run, _) in runs.items()
            )
        )
    return {
        name: report.as_json(run.results, options.budgets, header)
        for name, (run, header) in runs.items()
    }


def main() -> None:
    arguments = _arguments()
    console = Console(stderr=True)
    result = asyncio.run(evaluate_both(arguments, console))
    json.dump(result, sys.stdout, indent=2, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
