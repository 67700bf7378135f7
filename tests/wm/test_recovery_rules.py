"""DESIGN 3.6 and 3.7 "Recovery order", sentence by sentence: one table per sentence.

Each row is written from the rule: the raw string a model sent, and what the rule says comes out
(the path, and the ops or the document recovered). ``tests/wm/test_recovery.py`` holds the corpus
of damaged payloads; this file pins what counts as a success and what the text must be.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.wm.debug import merge_report
from app.wm.merge import merge
from app.wm.ops import OpKind
from app.wm.reasons import Reason
from app.wm.recovery import RecoveryPath, recover_arguments, recover_document
from app.wm.sections import SECTIONS, Section, parse
from tests.wm.helpers import words

P = RecoveryPath
KEEP: dict[str, Any] = {"op": "KEEP"}
TITLE: dict[str, Any] = {"op": "UPDATE", "content": "Fix the parser"}
ISSUE: dict[str, Any] = {"op": "APPEND", "items": ["Why does it fail?"]}
PAYLOAD: dict[str, Any] = {"sections": {"Session Title": TITLE, "Open Issues": ISSUE}}
ALL_STRINGS: dict[str, Any] = {"sections": {s.value: "KEEP" for s in SECTIONS}}


def outcome(raw: str) -> tuple[RecoveryPath, dict[str, object] | None]:
    """The path and the recovered sections, or None when nothing was recovered."""
    recovery = recover_arguments(raw)
    if recovery.arguments is None:
        return recovery.path, None
    sections = recovery.arguments["sections"]
    assert isinstance(sections, dict)
    return recovery.path, sections


def cut_before(text: str, marker: str) -> str:
    return text[: text.index(marker)]


# "A parse or repair counts as a success only if it yields an object in which at least one of the
# seven names maps to a well-formed op" ----------------------------------------------------------

NOT_A_SUCCESS: list[tuple[str, str]] = [
    ("sections is a string", '{"sections": "KEEP"}'),
    ("sections is a list", '{"sections": [{"op": "KEEP"}]}'),
    ("sections is a number", '{"sections": 7}'),
    ("sections is null", '{"sections": null}'),
    ("sections is empty", '{"sections": {}}'),
    ("an op given as a string", '{"sections": {"Open Issues": "none"}}'),
    ("every op given as a string", json.dumps(ALL_STRINGS)),
    ("ops as strings at the top level", '{"Open Issues": "none", "Session Title": "KEEP"}'),
    ("an op given as a list", '{"sections": {"Open Issues": ["a"]}}'),
    ("only unknown op names", '{"sections": {"Open Issues": {"op": "DROP"}}}'),
    ("UPDATE without content", '{"sections": {"Current State": {"op": "UPDATE"}}}'),
    ("repaired, and still no op", '{"sections": {"Open Issues": "none"},'),
    ("an empty object", "{}"),
    ("other names only", '{"notes": {"op": "KEEP"}}'),
    ("a wrapped string without a well-formed op",
     json.dumps({"tool_input": json.dumps({"sections": {"Open Issues": "none"}})})),
]  # fmt: skip


@pytest.mark.parametrize("raw", [pytest.param(raw, id=name) for name, raw in NOT_A_SUCCESS])
def test_without_a_well_formed_op_nothing_is_recovered(raw: str) -> None:
    assert outcome(raw) == (P.UNRECOVERABLE, None)


WRAPPED = json.dumps(PAYLOAD)
SUCCESS_OR_WRAPPER: list[tuple[str, str, RecoveryPath, dict[str, object]]] = [
    ("one well-formed op", '{"sections": {"Open Issues": {"op": "keep"}}}', P.PARSED,
     {"Open Issues": {"op": "keep"}}),
    ("one well-formed op among strings", json.dumps(
        {"sections": {"Open Issues": "none", "Session Title": TITLE}}), P.PARSED,
     {"Session Title": TITLE, "Open Issues": "none"}),
    ("repaired, with a well-formed op", WRAPPED + ",", P.REPAIRED, PAYLOAD["sections"]),
    ("wrapped in an object", json.dumps({"arguments": PAYLOAD}), P.SCANNED, PAYLOAD["sections"]),
    ("wrapped in a string", json.dumps({"tool_input": WRAPPED}), P.SCANNED, PAYLOAD["sections"]),
    ("a tool call with string arguments", json.dumps(
        {"name": "update_working_memory", "arguments": WRAPPED}), P.SCANNED, PAYLOAD["sections"]),
    ("top-level names wrapped in a string", json.dumps(
        {"input": json.dumps(PAYLOAD["sections"])}), P.SCANNED, PAYLOAD["sections"]),
    ("wrapped in a string, cut", cut_before(json.dumps({"tool_input": WRAPPED}), '\\"Open'),
     P.SCANNED, {"Session Title": TITLE}),
    ("wrapped in a string inside prose", "Calling: " + json.dumps({"tool_input": WRAPPED}),
     P.SCANNED, PAYLOAD["sections"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "path", "sections"),
    [pytest.param(raw, path, found, id=name) for name, raw, path, found in SUCCESS_OR_WRAPPER],
)
def test_a_wrapper_is_not_a_success_and_the_payload_inside_is_found(
    raw: str, path: RecoveryPath, sections: dict[str, object]
) -> None:
    assert outcome(raw) == (path, sections)


# "then the per-section scanner still runs for every section that the parse did not yield, and
# the union is used (parsed ops win)" ------------------------------------------------------------

UNION: list[tuple[str, str, RecoveryPath, dict[str, object], tuple[Section, ...]]] = [
    ("the scanner adds a section the parse did not yield",
     json.dumps({"sections": {"Session Title": TITLE}, "note": {"Open Issues": ISSUE}}),
     P.PARSED, PAYLOAD["sections"], (Section.OPEN_ISSUES,)),
    ("a parsed op wins over a scanned one",
     json.dumps({"sections": {"Open Issues": KEEP}, "draft": {"Open Issues": ISSUE}}),
     P.PARSED, {"Open Issues": KEEP}, ()),
    ("a section parsed as null is scanned",
     '{"sections": {"Session Title": {"op": "UPDATE", "content": "Fix the parser"}, '
     '"Open Issues": {"op": "APPEND", "items": ["Why does it fail?"]}, "Open Issues": null}}',
     P.PARSED, PAYLOAD["sections"], (Section.OPEN_ISSUES,)),
    ("an unusable parsed op nothing else replaces stays for the merge",
     json.dumps({"sections": {"Session Title": TITLE, "Open Issues": {"op": "DROP"}}}),
     P.PARSED, {"Session Title": TITLE, "Open Issues": {"op": "DROP"}}, ()),
    ("the scanner adds to a repaired payload",
     json.dumps({"sections": {"Session Title": TITLE}}) + ', "Open Issues": {"op": "KEEP"}}',
     P.REPAIRED, {"Session Title": TITLE, "Open Issues": KEEP}, (Section.OPEN_ISSUES,)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "path", "sections", "scanned"),
    [pytest.param(*row[1:], id=row[0]) for row in UNION],
)
def test_the_scanner_fills_what_the_parse_did_not_yield(
    raw: str, path: RecoveryPath, sections: dict[str, object], scanned: tuple[Section, ...]
) -> None:
    recovery = recover_arguments(raw)
    assert (recovery.path, recovery.arguments, recovery.scanned) == (
        path,
        {"sections": sections},
        scanned,
    )


# "a truncated UPDATE body is kept when another section's key follows it, dropped when the payload
# ends inside it" ---------------------------------------------------------------------------------

CUT_BODY = '{"sections": {"Current State": {"op": "UPDATE", "content": "Parser half done, tests'
TRUNCATED_UPDATE: list[tuple[str, str, RecoveryPath, dict[str, object] | None]] = [
    ("the payload ends inside the body", CUT_BODY, P.UNRECOVERABLE, None),
    ("the payload ends inside an escape", CUT_BODY + "\\", P.UNRECOVERABLE, None),
    ("another section's key follows", CUT_BODY + ' "Open Issues": {"op": "KEEP"}}}',
     P.SCANNED, {"Current State": {"op": "UPDATE", "content": "Parser half done, tests"},
                 "Open Issues": KEEP}),
    ("another section's key follows a comma", CUT_BODY + ', "Open Issues": {"op": "KEEP"}}}',
     P.SCANNED, {"Current State": {"op": "UPDATE", "content": "Parser half done, tests"},
                 "Open Issues": KEEP}),
    ("only blanks before the next key", CUT_BODY[: CUT_BODY.index("Parser")] +
     '  "Open Issues": {"op": "KEEP"}}}', P.SCANNED, {"Open Issues": KEEP}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "path", "sections"),
    [pytest.param(*row[1:], id=row[0]) for row in TRUNCATED_UPDATE],
)
def test_a_truncated_update_body(
    raw: str, path: RecoveryPath, sections: dict[str, object] | None
) -> None:
    assert outcome(raw) == (path, sections)


# "an APPEND keeps its complete strings only" ------------------------------------------------------

ITEMS = '{"sections": {"Open Issues": {"op": "APPEND", "items": ["First?", "Second?"'
TRUNCATED_APPEND: list[tuple[str, str, RecoveryPath, dict[str, object] | None]] = [
    ("cut inside the second item", cut_before(ITEMS, 'ond?"'), P.SCANNED,
     {"Open Issues": {"op": "APPEND", "items": ["First?"]}}),
    ("cut after the second item", ITEMS, P.REPAIRED,
     {"Open Issues": {"op": "APPEND", "items": ["First?", "Second?"]}}),
    ("cut inside a number", cut_before(ITEMS, '"Second') + "12", P.SCANNED,
     {"Open Issues": {"op": "APPEND", "items": ["First?"]}}),
    ("cut inside an item, another section follows", cut_before(ITEMS, 'ond?"') +
     ' "Session Title": {"op": "KEEP"}}}', P.SCANNED,
     {"Session Title": KEEP, "Open Issues": {"op": "APPEND", "items": ["First?"]}}),
    ("cut inside the only item", cut_before(ITEMS, 'st?"'), P.UNRECOVERABLE, None),
    ("cut right after the bracket", cut_before(ITEMS, '"First'), P.UNRECOVERABLE, None),
    ("cut inside the only item, another section follows", cut_before(ITEMS, 'st?"') +
     '"Session Title": {"op": "KEEP"}}}', P.SCANNED, {"Session Title": KEEP}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "path", "sections"),
    [pytest.param(*row[1:], id=row[0]) for row in TRUNCATED_APPEND],
)
def test_a_truncated_append_keeps_complete_strings_only(
    raw: str, path: RecoveryPath, sections: dict[str, object] | None
) -> None:
    assert outcome(raw) == (path, sections)


# "Text recovered from a truncated payload is always a prefix of what the model wrote": raw
# backslashes (Windows paths) are text, not escapes ---------------------------------------------


def files_payload(*items: str) -> str:
    """A Files & Context APPEND written by hand, so backslashes stay exactly as the model typed."""
    listed = ", ".join(f'"{item}"' for item in items)
    return (
        '{"sections": {"Files & Context": {"op": "APPEND", "items": [' + listed + "]}, "
        '"Open Issues": {"op": "KEEP"}}}'
    )


def files_items(raw: str) -> object:
    _, sections = outcome(raw)
    assert sections is not None
    op = sections["Files & Context"]
    assert isinstance(op, dict)
    return op["items"]


WINDOWS = r"C:\Users\me\app\main.py"
BACKSLASHES: list[tuple[str, str, RecoveryPath, object]] = [
    ("a raw Windows path", files_payload(WINDOWS), P.REPAIRED, [WINDOWS]),
    (r"\n and \t that are separators", files_payload(r"C:\Users\me\new\tools\notes.md"),
     P.REPAIRED, [r"C:\Users\me\new\tools\notes.md"]),
    (r"\a, \b, \f and \r that are separators", files_payload(r"D:\apps\build\fetch\run.py"),
     P.REPAIRED, [r"D:\apps\build\fetch\run.py"]),
    ("a drive path whose separators all look like escapes",
     files_payload(r"C:\new\table.py") + ",", P.REPAIRED, [r"C:\new\table.py"]),
    ("a UNC path", files_payload(r"\\server\share\app.py"), P.REPAIRED,
     [r"\\server\share\app.py"]),
    ("a path ending in a backslash", files_payload(r"C:\Users\me" + "\\"), P.REPAIRED,
     ["C:\\Users\\me\\"]),
    ("an escaped path, repaired", files_payload(r"C:\\Users\\me\\app.py") + ",", P.REPAIRED,
     [r"C:\Users\me\app.py"]),
    ("a raw path, cut after it", cut_before(files_payload(WINDOWS, "C:\\Users\\you"), "you"),
     P.SCANNED, [WINDOWS]),
    ("a raw path, cut inside the next one, another section follows",
     cut_before(files_payload(WINDOWS, "C:\\Users\\you"), "you") +
     ' "Open Issues": {"op": "KEEP"}}}', P.SCANNED, [WINDOWS]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "path", "items"),
    [pytest.param(*row[1:], id=row[0]) for row in BACKSLASHES],
)
def test_raw_backslashes_are_kept_as_written(raw: str, path: RecoveryPath, items: object) -> None:
    assert outcome(raw)[0] is path
    assert files_items(raw) == items


def test_escapes_in_other_words_of_the_same_string_still_decode() -> None:
    raw = (
        '{"sections": {"Current State": {"op": "UPDATE", "content": '
        r'"Moved C:\Users\me\app.py to git.\nNext: run \"pytest\""}}'
    )
    assert outcome(raw) == (
        P.REPAIRED,
        {
            "Current State": {
                "op": "UPDATE",
                "content": 'Moved C:\\Users\\me\\app.py to git.\nNext: run "pytest"',
            }
        },
    )


def test_a_cut_body_with_a_raw_path_is_a_prefix_of_what_was_written() -> None:
    raw = (
        r'{"sections": {"Current State": {"op": "UPDATE", "content": "Edit C:\Users\me\app.py and'
        ' "Open Issues": {"op": "KEEP"}}}'
    )
    assert outcome(raw) == (
        P.SCANNED,
        {
            "Current State": {"op": "UPDATE", "content": r"Edit C:\Users\me\app.py and"},
            "Open Issues": KEEP,
        },
    )


# 3.6: "Parse in this order, stopping at the first success" --------------------------------------

ORDER: list[tuple[str, str, RecoveryPath]] = [
    ("valid JSON is parsed", WRAPPED, P.PARSED),
    ("trailing whitespace is still valid JSON", WRAPPED + " \n\t", P.PARSED),
    ("a double-encoded payload is parsed", json.dumps(WRAPPED), P.PARSED),
    ("a trailing comma is repaired", WRAPPED + ",", P.REPAIRED),
    ("a comma before a closer is repaired", WRAPPED.replace("]}", "],}"), P.REPAIRED),
    ("unbalanced brackets are repaired", WRAPPED[:-2], P.REPAIRED),
    ("typographic quotes are repaired", WRAPPED.replace('"', "\u201d").replace(
        "\u201dsections\u201d", "\u201csections\u201d"), P.REPAIRED),
    ("a raw newline in a string is repaired", WRAPPED.replace("the parser", "the\nparser"),
     P.REPAIRED),
    ("a cut string is scanned", cut_before(WRAPPED, "does it"), P.SCANNED),
    ("prose alone is nothing", "I could not do it.", P.UNRECOVERABLE),
    ("no text is nothing", "", P.UNRECOVERABLE),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "path"), [pytest.param(raw, path, id=name) for name, raw, path in ORDER]
)
def test_recovery_order(raw: str, path: RecoveryPath) -> None:
    assert outcome(raw)[0] is path


# "Nothing recovered → the service runs its fallback chain (4.3); workmem wm merge, which has no
# model, keeps the prior and gives every section's decision the reason unrecoverable_arguments" ----

PRIOR = "## Session Title\nFix the parser\n## Open Issues\n- Why does it fail?\n"
UNUSABLE: list[tuple[str, str]] = [
    *NOT_A_SUCCESS,
    ("not JSON", "not json at all"),
    ("a JSON array", "[1, 2]"),
    ("a JSON string", json.dumps("no ops")),
    ("a tool call whose arguments have no op", json.dumps({"function": {"arguments": {}}})),
    ("a tool call whose argument string has no op",
     json.dumps({"arguments": json.dumps({"sections": {"Open Issues": "none"}})})),
]  # fmt: skip


@pytest.mark.parametrize("ops_text", [pytest.param(raw, id=name) for name, raw in UNUSABLE])
def test_wm_merge_reports_unusable_arguments_as_unrecoverable(ops_text: str) -> None:
    report = merge_report(PRIOR, ops_text, counter=words)
    decisions = report["decisions"]
    assert isinstance(decisions, list)
    assert [d["reason"] for d in decisions] == ["unrecoverable_arguments"] * len(SECTIONS)
    assert [d["requested"] for d in decisions] == [None] * len(SECTIONS)
    assert report["sections"] == {s.value: body for s, body in parse(PRIOR).sections.items()}
    assert report["recovery"] == {"path": "unrecoverable", "scanned": []}


UNUSABLE_OBJECTS: list[tuple[str, object]] = [
    *((name, json.loads(raw)) for name, raw in NOT_A_SUCCESS if not raw.endswith(",")),
    ("null", None),
    ("a list", []),
    ("a string", "text"),
    ("a number", 3),
    ("sections is an empty list", {"sections": []}),
]


@pytest.mark.parametrize(
    "arguments", [pytest.param(value, id=name) for name, value in UNUSABLE_OBJECTS]
)
def test_merge_of_arguments_without_a_usable_op_is_unrecoverable(arguments: object) -> None:
    prior = parse(PRIOR).sections
    result = merge(prior, arguments, counter=words)
    assert result.sections == {s: prior[s] for s in SECTIONS}
    assert all(
        (d.requested, d.applied, d.reason) == (None, OpKind.KEEP, Reason.UNRECOVERABLE_ARGUMENTS)
        for d in result.decisions
    )
    assert all("schema_violation" in d.details for d in result.decisions)


# The creation call (DESIGN 3.3, 4.3): the Markdown string, or None when it is unusable ----------

DOC = "# Working Memory\n## Session Title\nFix the parser\n## Open Issues\n- Why?"
ENCODED = json.dumps({"markdown": DOC})
CURLY = "{\u201cmarkdown\u201d: \u201c" + DOC.replace("\n", "\\n") + "\u201d}"
RAW_NEWLINES = '{"markdown": "' + DOC + '"}'
PATH_DOC = DOC + "\n- C:\\Users\\me\\new\\main.py"
DOCUMENTS: list[tuple[str, str, str | None]] = [
    ("intact", ENCODED, DOC),
    ("cut after the closing quote", ENCODED[:-1], DOC),
    ("cut after the closing quote and a comma", ENCODED[:-1] + ",\n ", DOC),
    ("cut inside the string", ENCODED[:-3], None),
    ("cut inside the string, raw newlines", RAW_NEWLINES[:-4], None),
    ("typographic quotes as JSON quotes", CURLY, DOC),
    ("typographic quotes, cut after the closing quote", CURLY[:-1], DOC),
    ("typographic quotes in the text too",
     "{\u201cmarkdown\u201d: \u201c## Open Issues\\n- The \u201cfast\u201d path?\u201d}",
     "## Open Issues\n- The \u201cfast\u201d path?"),
    ("raw newlines", RAW_NEWLINES, DOC),
    ("raw newlines, cut after the closing quote", RAW_NEWLINES[:-1], DOC),
    ("a raw tab", RAW_NEWLINES.replace("- Why", "-\tWhy"), DOC.replace("- Why", "-\tWhy")),
    ("a raw control character", RAW_NEWLINES.replace("Why", "Why\x01"),
     DOC.replace("Why", "Why\x01")),
    ("a raw Windows path", '{"markdown": "' + PATH_DOC.replace("\n", "\\n") + '"}', PATH_DOC),
    ("a raw Windows path and raw newlines", '{"markdown": "' + PATH_DOC + '"}', PATH_DOC),
    ("in a code fence", "```json\n" + ENCODED + "\n```", DOC),
    ("in prose", "Here it is: " + ENCODED + " Done.", DOC),
    ("double-encoded", json.dumps(ENCODED), DOC),
    ("plain Markdown", DOC, DOC),
    ("plain Markdown in a code fence", "```markdown\n" + DOC + "\n```\n", DOC),
    ("plain Markdown quoting a JSON object", DOC + '\n- retries {"max": 3}',
     DOC + '\n- retries {"max": 3}'),
    ("a document naming no section", json.dumps({"markdown": "Sorry, I cannot."}), None),
    ("a blank document", json.dumps({"markdown": "  "}), None),
    ("a document that is not a string", json.dumps({"markdown": 3}), None),
    ("a null document", '{"markdown": null}', None),
    ("plain text naming no section", "I could not write it.", None),
    ("no text", "", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "document"), [pytest.param(raw, doc, id=name) for name, raw, doc in DOCUMENTS]
)
def test_recover_document(raw: str, document: str | None) -> None:
    assert recover_document(raw) == document
