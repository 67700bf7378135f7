"""JSON reports for the ``workmem wm`` debugging commands: a merge, or an extraction, by hand.

Owns how a prior document and an ops text are read for inspection (an ops object, a tool call,
or a raw argument string that goes through recovery) and what the report holds. Pure: it takes
strings and messages and returns JSON-able dicts; reading files and printing is the caller's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from app.wm.extractor import extract_ops
from app.wm.merge import MergeResult, keep_all, merge
from app.wm.recovery import Recovery, recover_arguments
from app.wm.schema import has_well_formed_op, locate_ops
from app.wm.sections import ParsedDocument, parse
from app.wm.tokens import TokenCounter, count_tokens


def merge_report(
    prior_markdown: str, ops_text: str, *, counter: TokenCounter = count_tokens
) -> dict[str, object]:
    """Merge ``ops_text`` into the prior document and report everything that was decided.

    ``ops_text`` may be a JSON object of ops (``{"sections": ...}`` or the seven names at the
    top level), a tool call object carrying ``arguments``, or the raw argument string a model
    returned. Anything but an object with a well-formed op goes through recovery, exactly as the
    service's arguments do; unrecoverable arguments keep the prior, and every decision says
    ``unrecoverable_arguments`` (DESIGN 3.7).
    """
    document = parse(prior_markdown)
    arguments, recovery = _read_ops(ops_text)
    if arguments is None:
        result = keep_all(document.sections, counter=counter)
    else:
        result = merge(document.sections, arguments, counter=counter)
    return _report(document, result, recovery)


def extract_report(
    messages: Sequence[Mapping[str, object]],
    prior_markdown: str = "",
    *,
    counter: TokenCounter = count_tokens,
) -> dict[str, object]:
    """The offline extractor's ops for these messages, and what merging them would give."""
    document = parse(prior_markdown)
    ops = extract_ops(messages, document.sections, counter=counter)
    result = merge(document.sections, ops, counter=counter)
    return {"ops": ops, **_report(document, result, None)}


def _read_ops(ops_text: str) -> tuple[object, Recovery | None]:
    try:
        value: object = json.loads(ops_text)
    except (ValueError, RecursionError):
        return _recover(ops_text)
    text = ops_text
    if isinstance(value, Mapping) and not locate_ops(value):
        arguments = _tool_call_arguments(value)
        if isinstance(arguments, Mapping):
            value, text = arguments, json.dumps(arguments)
        elif arguments is not None:
            value = arguments
    if has_well_formed_op(value):
        return value, None
    return _recover(value if isinstance(value, str) else text)


def _recover(text: str) -> tuple[object, Recovery]:
    recovery = recover_arguments(text)
    return recovery.arguments, recovery


def _tool_call_arguments(value: Mapping[str, object]) -> object:
    """The ``arguments`` of a tool call object (bare, or under ``function``), if it is one."""
    function = value.get("function")
    holder = function if isinstance(function, Mapping) else value
    arguments = holder.get("arguments")
    return arguments if isinstance(arguments, str | Mapping) else None


def _report(
    document: ParsedDocument, result: MergeResult, recovery: Recovery | None
) -> dict[str, object]:
    report = result.to_dict()
    report["preamble"] = document.preamble
    report["extra"] = [{"heading": extra.heading, "body": extra.body} for extra in document.extra]
    report["recovery"] = (
        None
        if recovery is None
        else {"path": recovery.path.value, "scanned": [s.value for s in recovery.scanned]}
    )
    return report
