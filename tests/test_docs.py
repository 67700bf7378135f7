"""The docs list what the code uses: the stop-word lists, every reason code and every route of
the OpenViking-compatible API in its route-by-route table, whose counts are the table's own."""

from __future__ import annotations

from pathlib import Path

from app.wm.anchors import PROPER_NOUN_STOP_WORDS, TITLE_STOP_WORDS
from app.wm.reasons import Reason

DOC = Path(__file__).resolve().parent.parent / "docs" / "working-memory.md"


def test_stop_words_and_reasons_are_documented() -> None:
    text = DOC.read_text()
    proper_nouns = text.split("so that sentence openers do not count as names:", 1)[1]
    listed = {word.strip(" .\n") for word in proper_nouns.replace("\n", " ").split(",")}
    assert listed == set(PROPER_NOUN_STOP_WORDS)
    title_line = next(line for line in text.splitlines() if line.startswith("Meaningful title"))
    title_words = {w.strip(" .") for w in title_line.split(":", 1)[1].split(",")}
    assert title_words == set(TITLE_STOP_WORDS)
    for reason in Reason:
        assert f"`{reason.value}`" in text, reason


OPENVIKING_DOC = DOC.parent / "openviking-api.md"
STATUSES = ("supported", "differently", "not", "extension")


def openviking_rows() -> list[list[str]]:
    """The route-by-route table: route, field, status here, how or why, status before."""
    section = OPENVIKING_DOC.read_text().split("## OpenViking's session API, route by route", 1)[1]
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in section.split("\n## ", 1)[0].splitlines()
        if line.startswith("| `")
    ]


def test_every_openviking_route_and_parameter_is_in_the_table() -> None:
    from app.compat.openviking.app import create_openviking_app

    rows = openviking_rows()
    assert all(len(row) == 5 and row[2] in STATUSES and row[4] in STATUSES for row in rows)
    listed = {(row[0].strip("`"), row[1].strip("`")) for row in rows}
    document = create_openviking_app().openapi()
    served = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            route = f"{method.upper()} /api/v1{path}"
            assert (route, "—") in listed, route
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    assert (route, parameter["name"]) in listed, (route, parameter["name"])
            served += 1
    assert served == 14
    # A route served here is never marked as answered NOT_FOUND.
    served_routes = {
        f"{method.upper()} /api/v1{path}"
        for path, item in document["paths"].items()
        for method in item
    }
    for row in rows:
        if row[1] == "—":
            assert (row[2] == "not") == (row[0].strip("`") not in served_routes), row[0]


def test_openviking_counts_match_the_table() -> None:
    rows = [row for row in openviking_rows() if row[2] != "extension"]
    now = {status: sum(row[2] == status for row in rows) for status in STATUSES}
    before = {status: sum(row[4] == status for row in rows) for status in STATUSES}
    text = " ".join(OPENVIKING_DOC.read_text().split())
    assert f"Counted over the {len(rows)} routes and fields" in text
    assert (
        f"now {now['supported']} supported, {now['differently']} supported differently and "
        f"{now['not']} not supported; before, {before['supported']} supported, "
        f"{before['differently']} supported differently and {before['not']} not supported."
    ) in text
