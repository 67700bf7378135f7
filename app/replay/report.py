"""The evaluation's verdict over many conversations: means, ratios, targets, JSON and Markdown.

Pure. Owns the aggregate figures (mean anchor recall per set, budget and mode; the filled
context against truncation; the worst conversation), the targets with pass or fail, and both
renderings. The recall and size targets are about *long* conversations (a history of at least
``LONG_TOKENS``, about twice the largest budget evaluated): a short one fits its budgets nearly
raw, so nothing can beat truncation there, and a working memory plus a kept tail cannot be a
fifth of it; short ones are still listed. Never replays or scores a conversation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import mean
from typing import Any, Final

from app.replay.evaluation import FEATURE_MODES, MODES, ConversationResult, Mode

LONG_TOKENS: Final = 15_000
RECALL_RATIO_TARGET: Final = 1.5
WM_TOKEN_LIMIT: Final = 12_000
DEFAULT_CONTEXT_SHARE_LIMIT: Final = 0.20


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    value: float | int | None
    target: str
    passed: bool

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "target": self.target, "pass": self.passed}


def is_long(result: ConversationResult) -> bool:
    return result.history_tokens >= LONG_TOKENS


def _share(result: ConversationResult, budget: int, mode: Mode) -> float | None:
    scored = result.scores[budget].get(mode)
    return None if scored is None else scored.share


def mean_recall(results: Sequence[ConversationResult], budget: int, mode: Mode) -> float | None:
    """The mean of the conversations' pooled recall (conversations without anchors skipped)."""
    shares = [share for r in results if (share := _share(r, budget, mode)) is not None]
    return mean(shares) if shares else None


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def below_truncation(results: Sequence[ConversationResult], budget: int) -> list[str]:
    """Conversations whose filled context keeps fewer anchors than truncation at ``budget``."""
    return [
        r.name
        for r in results
        if (f := _share(r, budget, "filled")) is not None
        and (t := _share(r, budget, "truncation")) is not None
        and f < t
    ]


def targets(every: Sequence[ConversationResult], budgets: Sequence[int]) -> list[Target]:
    results = [result for result in every if is_long(result)]
    found: list[Target] = []
    for budget in budgets:
        ratio = _ratio(
            mean_recall(results, budget, "filled"), mean_recall(results, budget, "truncation")
        )
        found.append(
            Target(
                f"filled / truncation anchor recall at {budget}",
                None if ratio is None else round(ratio, 3),
                f">= {RECALL_RATIO_TARGET}",
                ratio is not None and ratio >= RECALL_RATIO_TARGET,
            )
        )
        below = below_truncation(results, budget)
        found.append(
            Target(
                f"conversations below truncation at {budget}",
                len(below),
                "0",
                not below,
            )
        )
    losses = sum(len(r.losses) for r in every)
    found.append(Target("protected-item loss", losses, "0", losses == 0))
    largest = max((r.wm_tokens for r in every), default=0)
    found.append(
        Target(
            "largest working memory (tokens)",
            largest,
            f"<= {WM_TOKEN_LIMIT}",
            largest <= WM_TOKEN_LIMIT,
        )
    )
    share = max((r.default_context_share for r in results), default=0.0)
    found.append(
        Target(
            "largest default context / full history",
            round(share, 4),
            f"<= {DEFAULT_CONTEXT_SHARE_LIMIT}",
            share <= DEFAULT_CONTEXT_SHARE_LIMIT,
        )
    )
    reproduced = [r.reproduced for r in every if r.reproduced is not None]
    if reproduced:
        found.append(
            Target(
                "offline working memory reproduced in process",
                sum(reproduced),
                f"= {len(reproduced)}",
                all(reproduced),
            )
        )
    return found


def summary(results: Sequence[ConversationResult], budgets: Sequence[int]) -> dict[str, Any]:
    sets = sorted({r.set for r in results})
    by_budget: dict[str, Any] = {}
    for budget in budgets:
        entry: dict[str, Any] = {}
        for scope, chosen in [
            ("long", [r for r in results if is_long(r)]),
            *((s, [r for r in results if r.set == s]) for s in sets),
        ]:
            means = {mode: mean_recall(chosen, budget, mode) for mode in MODES}
            entry[scope] = {
                **{mode: _rounded(value) for mode, value in means.items()},
                "filled_vs_truncation": _rounded(_ratio(means["filled"], means["truncation"])),
                "default_vs_truncation": _rounded(_ratio(means["default"], means["truncation"])),
                "below_truncation": below_truncation(chosen, budget),
            }
        by_budget[str(budget)] = entry
    return {"by_budget": by_budget, "conversations": len(results)}


def feature_summary(
    results: Sequence[ConversationResult], budgets: Sequence[int]
) -> dict[str, Any] | None:
    """With the feature modes scored: mean recall of each next to the plain modes, the tokens
    the contexts cost and clearing saved, by budget and set; ``None`` when none was scored."""
    if not any(mode in r.scores[b] for r in results for b in budgets for mode in FEATURE_MODES):
        return None
    by_budget: dict[str, Any] = {}
    for budget in budgets:
        entry: dict[str, Any] = {}
        for scope in sorted({r.set for r in results}):
            chosen = [r for r in results if r.set == scope]
            modes = [*MODES, *FEATURE_MODES]
            entry[scope] = {
                "recall": {mode: _rounded(mean_recall(chosen, budget, mode)) for mode in modes},
                "tokens": {
                    mode: sum(
                        r.scores[budget][mode].tokens for r in chosen if mode in r.scores[budget]
                    )
                    for mode in modes
                },
                "tokens_saved_by_clearing": {
                    mode: sum(
                        r.scores[budget][mode].saved for r in chosen if mode in r.scores[budget]
                    )
                    for mode in ("cleared", "filled_cleared")
                },
            }
        by_budget[str(budget)] = entry
    return {
        "by_budget": by_budget,
        "unsourced_items": sum(len(r.unsourced) for r in results),
        "pinned_conversations": sum("pinned" in r.scores[budgets[0]] for r in results),
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def as_json(
    results: Sequence[ConversationResult],
    budgets: Sequence[int],
    header: Mapping[str, Any],
) -> dict[str, Any]:
    features = feature_summary(results, budgets)
    return {
        **header,
        "summary": summary(results, budgets),
        **({"features": features} if features is not None else {}),
        "targets": [target.as_json() for target in targets(results, budgets)],
        "conversations": [result.as_json() for result in results],
    }


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def as_markdown(results: Sequence[ConversationResult], budgets: Sequence[int], title: str) -> str:
    """Three tables: recall by set and budget, each conversation, and the targets."""
    lines = [f"### {title}", ""]
    lines += [
        "| set | budget | truncation | default | filled | filled ÷ truncation |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    sets = ["long", *sorted({r.set for r in results})]
    for scope in sets:
        chosen = [r for r in results if (is_long(r) if scope == "long" else r.set == scope)]
        for budget in budgets:
            means = {mode: mean_recall(chosen, budget, mode) for mode in MODES}
            ratio = _ratio(means["filled"], means["truncation"])
            lines.append(
                f"| {scope} ({len(chosen)}) | {budget} | {_cell(means['truncation'])} | "
                f"{_cell(means['default'])} | {_cell(means['filled'])} | {_cell(ratio)} |"
            )
    middle = budgets[len(budgets) // 2]
    lines += [
        "",
        f"| conversation | messages | archives | WM tokens | lost | context ÷ history at "
        f"128k: default / filled | recall at {middle}: truncation / default / filled | hash |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in results:
        recalls = " / ".join(_cell(_share(r, middle, mode)) for mode in MODES)
        lines.append(
            f"| {r.name[:48]} | {r.messages} | {r.archives} | {r.wm_tokens} | {len(r.losses)} | "
            f"{r.default_context_share:.3f} / {r.filled_window_share:.3f} | {recalls} | "
            f"`{r.determinism_hash[:12]}` |"
        )
    lines += ["", "| target | value | wanted | |", "|---|---:|---|---|"]
    for target in targets(results, budgets):
        mark = "pass" if target.passed else "**fail**"
        lines.append(f"| {target.name} | {target.value} | {target.target} | {mark} |")
    return "\n".join(lines) + "\n"
