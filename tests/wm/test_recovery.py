"""Recovery of malformed tool arguments (DESIGN 3.6, 3.7 "Recovery order").

Every case states which sections must come back and by which path; every recovered op must be
one the intact payload would have produced (same op, content a prefix, items a prefix).
"""

from __future__ import annotations

import json

import pytest

from app.wm.ops import OpKind, SectionOp
from app.wm.recovery import (
    RecoveryPath,
    recover_arguments,
    recover_document,
    repair,
    scan_sections,
)
from app.wm.schema import interpret, locate_ops
from app.wm.sections import SECTIONS, Section
from tests.support.recovery import INTACT, VALID

EXPECTED: dict[Section, SectionOp] = {
    section: op
    for section, raw in locate_ops(INTACT).items()
    if (op := interpret(raw)[0]) is not None
}
ALL = frozenset(SECTIONS)
TITLE, STATE, GOALS, FACTS, FILES, ERRORS, ISSUES = SECTIONS


def compatible(section: Section, raw: object) -> bool:
    """Whether a recovered op is one the intact payload would have produced."""
    op, _ = interpret(raw)
    if op is None:
        return False
    expected = EXPECTED[section]
    if op.kind is not expected.kind:
        return False
    if op.kind is OpKind.UPDATE:
        return _quotes(expected.content).startswith(_quotes(op.content.rstrip()))
    return [_quotes(item) for item in expected.items[: len(op.items)]] == [
        _quotes(item) for item in op.items
    ]


def _quotes(text: str) -> str:
    # Corpus cases that swap every quote for a typographic one also swap those inside strings.
    return text.translate(str.maketrans("“”", '""'))


def recovered_ops(raw: str) -> dict[Section, object]:
    """The well-formed ops recovered; a parsed op that is not well-formed is left to the merge,
    which keeps the section and records ``invalid_op``."""
    recovery = recover_arguments(raw)
    if recovery.arguments is None:
        return {}
    located = locate_ops(recovery.arguments)
    return {section: op for section, op in located.items() if interpret(op)[0] is not None}


def without_closing_quote(marker: str) -> str:
    """The payload with the closing quote of the string that ends just before ``marker``."""
    index = VALID.index(marker)
    return VALID[: index - 1] + VALID[index:]


CORPUS: list[tuple[str, str, RecoveryPath, frozenset[Section]]] = [
    ("intact", VALID, RecoveryPath.PARSED, ALL),
    ("trailing whitespace", VALID + "  \n", RecoveryPath.PARSED, ALL),
    ("trailing comma after the object", VALID + ",", RecoveryPath.REPAIRED, ALL),
    ("trailing comma inside", VALID.replace('{"op": "KEEP"}', '{"op": "KEEP",}'),
     RecoveryPath.REPAIRED, ALL),
    ("comma before a closing bracket", VALID.replace('"a, b"]', '"a, b",]'),
     RecoveryPath.REPAIRED, ALL),
    ("cut after the third section", VALID[: VALID.index(', "Key Facts')],
     RecoveryPath.REPAIRED, frozenset({TITLE, STATE, GOALS})),
    ("cut after a comma", VALID[: VALID.index(' "Key Facts')], RecoveryPath.REPAIRED,
     frozenset({TITLE, STATE, GOALS})),
    ("cut inside the last item", VALID[: VALID.index("{braces}")], RecoveryPath.SCANNED,
     ALL - {ISSUES}),
    ("cut inside an UPDATE body", VALID[: VALID.index("half done")], RecoveryPath.SCANNED,
     frozenset({TITLE})),
    ("cut after a key", VALID[: VALID.index('"Task & Goals":') + 15], RecoveryPath.SCANNED,
     frozenset({TITLE, STATE})),
    ("cut after the op name", VALID[: VALID.index(', "content": "- app')],
     RecoveryPath.REPAIRED, frozenset({TITLE, STATE, GOALS, FACTS})),
    ("cut inside an escape", VALID[: VALID.index('\\"ok') + 1], RecoveryPath.SCANNED,
     frozenset({TITLE})),
    ("unclosed body followed by a section", without_closing_quote('}, "Task & Goals"'),
     RecoveryPath.SCANNED, ALL),
    ("typographic quotes as JSON quotes",
     VALID.replace('"op": "KEEP"', "“op”: “KEEP”").replace('"Session Title"', "“Session Title”"),
     RecoveryPath.REPAIRED, ALL),
    ("typographic quotes everywhere", VALID.replace('"', "”"), RecoveryPath.REPAIRED, ALL),
    ("raw newline in a string", VALID.replace("\\n", "\n"), RecoveryPath.REPAIRED, ALL),
    ("raw tab and control characters", VALID.replace("\\t", "\t").replace("\\u0001", "\x01"),
     RecoveryPath.REPAIRED, ALL),
    ("unescaped quotes in a body", VALID.replace('\\"ok\\"', '"ok"'), RecoveryPath.SCANNED, ALL),
    ("content before op", VALID.replace(
        '{"op": "UPDATE", "content": "- app/wm/recovery.py"}',
        '{"content": "- app/wm/recovery.py", "op": "UPDATE"}'), RecoveryPath.PARSED, ALL),
    ("wrapped in prose", f"Here is the update: {VALID} Hope this helps!", RecoveryPath.REPAIRED,
     ALL),
    ("wrapped in a code fence", f"```json\n{VALID}\n```", RecoveryPath.REPAIRED, ALL),
    ("prose with braces before the payload", f"Use {{this}} format:\n{VALID}",
     RecoveryPath.SCANNED, ALL),
    ("duplicated section", VALID.replace('"Task & Goals": {"op": "KEEP"}',
     '"Task & Goals": {"op": "KEEP"}, "Task & Goals": {"op": "KEEP"}'), RecoveryPath.PARSED, ALL),
    ("sections at the top level", json.dumps(INTACT["sections"]), RecoveryPath.PARSED, ALL),
    ("lower-case op names", VALID.replace('"KEEP"', '"keep"').replace('"APPEND"', '"append"'),
     RecoveryPath.PARSED, ALL),
    ("double-encoded", json.dumps(VALID), RecoveryPath.PARSED, ALL),
    ("missing commas between sections", VALID.replace("}, ", "} "), RecoveryPath.SCANNED, ALL),
    ("lower-case section names, broken", VALID.replace("Open Issues", "open issues")[:-2],
     RecoveryPath.REPAIRED, ALL),
    ("mismatched closer", VALID[:-2] + "]}", RecoveryPath.SCANNED, ALL),
    ("wrapped in another object", json.dumps({"arguments": INTACT}), RecoveryPath.SCANNED, ALL),
    ("plain prose", "I could not update the working memory.", RecoveryPath.UNRECOVERABLE,
     frozenset()),
    ("empty", "", RecoveryPath.UNRECOVERABLE, frozenset()),
    ("empty object", "{}", RecoveryPath.UNRECOVERABLE, frozenset()),
    ("array", "[1, 2]", RecoveryPath.UNRECOVERABLE, frozenset()),
    ("single quotes", str(INTACT), RecoveryPath.UNRECOVERABLE, frozenset()),
    ("only invalid ops", json.dumps({"sections": {"Current State": {"op": "DELETE"}}}),
     RecoveryPath.UNRECOVERABLE, frozenset()),
    ("deeply nested", "[" * 100_000 + "]" * 100_000, RecoveryPath.UNRECOVERABLE, frozenset()),
    ("section key without an object", '{"sections": {"Session Title": "KEEP", "Open',
     RecoveryPath.UNRECOVERABLE, frozenset()),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "path", "sections"),
    [pytest.param(raw, path, sections, id=name) for name, raw, path, sections in CORPUS],
)
def test_malformed_arguments_corpus(
    raw: str, path: RecoveryPath, sections: frozenset[Section]
) -> None:
    recovery = recover_arguments(raw)
    assert recovery.path is path
    ops = recovered_ops(raw)
    assert set(ops) == sections
    for section, raw_op in ops.items():
        assert compatible(section, raw_op), (section, raw_op)


def test_the_corpus_has_at_least_thirty_cases() -> None:
    assert len(CORPUS) >= 30


def test_truncation_at_every_position_never_raises_nor_invents() -> None:
    recovered_counts = []
    for end in range(len(VALID) + 1):
        ops = recovered_ops(VALID[:end])
        for section, raw_op in ops.items():
            assert compatible(section, raw_op), (end, section, raw_op)
        recovered_counts.append(len(ops))
    assert recovered_counts[-1] == len(SECTIONS)
    assert recovered_counts == sorted(recovered_counts)


def test_a_partial_body_is_kept_only_when_another_section_follows() -> None:
    broken = '{"Current State": {"op": "UPDATE", "content": "Working on the parser and, '
    followed = broken + '"Open Issues": {"op": "KEEP"}}'
    assert recovered_ops(broken) == {}
    assert recovered_ops(followed) == {
        STATE: {"op": "UPDATE", "content": "Working on the parser and"},
        ISSUES: {"op": "KEEP"},
    }


def test_parsed_ops_win_and_the_scanner_fills_the_rest() -> None:
    raw = (
        '{"sections": {"Session Title": {"op": "UPDATE", "content": "T"}}, '
        '"note": {"Open Issues": {"op": "KEEP"}}}'
    )
    recovery = recover_arguments(raw)
    assert recovery.path is RecoveryPath.PARSED
    assert recovery.scanned == (ISSUES,)
    assert recovery.arguments == {
        "sections": {
            "Session Title": {"op": "UPDATE", "content": "T"},
            "Open Issues": {"op": "KEEP"},
        }
    }


def test_an_invalid_parsed_op_is_kept_for_the_merge_to_report() -> None:
    raw = '{"sections": {"Session Title": {"op": "KEEP"}, "Open Issues": {"op": "DROP"}}}'
    recovery = recover_arguments(raw)
    assert recovery.arguments == {
        "sections": {"Session Title": {"op": "KEEP"}, "Open Issues": {"op": "DROP"}}
    }


@pytest.mark.parametrize(
    ("raw", "repaired"),
    [
        ('{"a": true', '{"a": true}'),
        ('{"a": 1', None),
        ('{"a": [1, 2', None),  # cut inside a number: maybe "23"
        ('{"a": [true', '{"a": [true]}'),
        ('{"a": 1e', None),
        ('{"a": -', None),
        ('{"a":', None),
        ('{"a": "b', None),
        ('{"a": "b\\', None),
        ('{"a": {"b": 1},', '{"a": {"b": 1}}'),
        ('{"a": "x\ny"}', '{"a": "x\\ny"}'),
        ('{"a": "\x02"}', '{"a": "\\u0002"}'),
        ('{“a”: “say "hi"”}', '{"a": "say \\"hi\\""}'),
        ("{“a”: “say “hi”, then go”}", None),
        ("{“a”: “b\\”c”}", '{"a": "b”c"}'),
        ('{"a": "C:\\Users\\x"}', '{"a": "C:\\\\Users\\\\x"}'),
        ('{"a": "\\', None),
        ('{"a": [', None),
        ('{"a": [ ,', None),
        ('{"a": []', '{"a": []}'),
        ("{“a”: “b”}", '{"a": "b"}'),
        ('{"a": "“b”"}', '{"a": "“b”"}'),
        ('{"a": [1}', None),
        ("no object here", None),
        ('x {"a": 1} y {"b": 2}', '{"a": 1}'),
    ],
)
def test_repair(raw: str, repaired: str | None) -> None:
    assert repair(raw) == repaired


@pytest.mark.parametrize(
    ("raw", "found"),
    [
        (
            '"Open Issues": {"op": "APPEND", "items": ["a ] b", 3, -2.5, true, "c"]}',
            {ISSUES: {"op": "APPEND", "items": ["a ] b", 3, -2.5, "c"]}},
        ),
        (
            '"Open Issues": {"op": "APPEND", "items": ["a", 12',
            {ISSUES: {"op": "APPEND", "items": ["a"]}},
        ),
        (
            '"Open Issues": {"op": "APPEND", "items": [1 2]}',
            {ISSUES: {"op": "APPEND", "items": []}},
        ),
        (
            '"Open Issues": {"op": "APPEND", "items": "one"}',
            {ISSUES: {"op": "APPEND", "items": "one"}},
        ),
        (
            '"Current State": {"op": "UPDATE", "content": "caf\\u00e9 \\uZZ \\q \\t"}',
            {STATE: {"op": "UPDATE", "content": "café \\uZZ \\q \t"}},
        ),
        ('"Current State": {"meta": {"x": "}"}, "op": "KEEP"}', {STATE: {"op": "KEEP"}}),
        ('"Current State": {"n": 5, "op": "KEEP", "op": "UPDATE"}', {STATE: {"op": "KEEP"}}),
        ('"Current State": {junk "op": "KEEP"}', {STATE: {"op": "KEEP"}}),
        ('"Current State": {"op" "KEEP", "op": "KEEP"}', {STATE: {"op": "KEEP"}}),
        ('"Current State": {"op": }', {}),
        ('"Current State": {"op": "UPDATE", "content": "   ', {}),
        (
            '"Current State": {"op": "UPDATE", "content": " ", "Open Issues": {"op": "KEEP"}',
            {STATE: {"op": "UPDATE", "content": " "}, ISSUES: {"op": "KEEP"}},
        ),
        (
            '"Current State": {"op": "UPDATE", "content": "  "Open Issues": {"op": "KEEP"}',
            {ISSUES: {"op": "KEEP"}},
        ),
        ('"Current State": ', {}),
        ('"Current State": {', {}),
        ('\\"Current State\\": {"op": "KEEP"}', {}),
        ("“Current State”: {“op”: “KEEP”}", {STATE: {"op": "KEEP"}}),
        ('"Current State": {"op": "KEEP", "x": {"y": "\\"}"', {STATE: {"op": "KEEP"}}),
        ('"Current State": {"x": {"y": {"z": 1}}, "op": "KEEP"}', {STATE: {"op": "KEEP"}}),
        (
            '"Open Issues": {"op": "APPEND", "items": ["a",  ',
            {ISSUES: {"op": "APPEND", "items": ["a"]}},
        ),
    ],
)
def test_scanner(raw: str, found: dict[Section, object]) -> None:
    assert scan_sections(raw) == found


def test_a_triple_encoded_payload_is_not_unwrapped_forever() -> None:
    triple = json.dumps(json.dumps(json.dumps({"Open Issues": {"op": "KEEP"}})))
    recovery = recover_arguments(triple)
    assert recovery.path is RecoveryPath.UNRECOVERABLE


def test_the_scanner_skips_sections_it_is_told_to() -> None:
    raw = '"Current State": {"op": "KEEP"}, "Open Issues": {"op": "KEEP"}'
    assert scan_sections(raw, skip=frozenset({STATE})) == {ISSUES: {"op": "KEEP"}}


@pytest.mark.parametrize(
    ("raw", "document"),
    [
        (
            '{"markdown": "# Working Memory\\n## Session Title\\nT"}',
            "# Working Memory\n## Session Title\nT",
        ),
        ('{"markdown": "## Open Issues\\n- q"', "## Open Issues\n- q"),
        ('{"markdown": "## Open Issues\n- q"}', "## Open Issues\n- q"),
        ('{"markdown": "  "}', None),
        ('{"markdown": 3}', None),
        ('{"markdown": "## Open Issues\\n- cut', None),
        (
            "# Working Memory\n## Session Title\nPlain text answer",
            "# Working Memory\n## Session Title\nPlain text answer",
        ),
        ("I could not write it.", None),
        ("", None),
    ],
)
def test_recover_document(raw: str, document: str | None) -> None:
    assert recover_document(raw) == document
