"""The memory rules read an archive's messages in two goes (the first ahead of the archive, the
rest in its job) exactly as in one, also through the checkpoint's stored form."""

from __future__ import annotations

import json

from app.archives.plan import Progress
from app.archives.prepared import Checkpoint, checkpoint_of
from app.memories.rules import RuleScan, extract_memories
from app.wm.sections import empty_sections
from tests.support.long_sessions import coding_session

MESSAGES = list(enumerate(coding_session(12), start=1))


def through_storage(scan: RuleScan) -> RuleScan:
    checkpoint = Checkpoint(0, 1, 2, 2_000, "f", Progress(1, empty_sections(), {}), scan)
    state = json.loads(json.dumps(checkpoint.state(), sort_keys=True))
    read = checkpoint_of(
        prior_archive_seq=0, first_seq=1, end_seq=2, budget=2_000, fingerprint="f", state=state
    )
    assert read is not None
    assert read.scan is not None
    return read.scan


def test_the_session_gives_candidates_skips_and_lessons() -> None:
    whole = extract_memories(MESSAGES)
    rules = {candidate.rule.split(".")[0] for candidate in whole.candidates}
    assert {"lesson"} < rules
    assert whole.skipped


def test_reading_in_two_goes_anywhere_finds_what_one_reading_finds() -> None:
    whole = extract_memories(MESSAGES)
    for cut in range(len(MESSAGES) + 1):
        first = RuleScan().read(MESSAGES[:cut])
        assert first.read(MESSAGES[cut:]).extraction() == whole, cut
        assert through_storage(first).read(MESSAGES[cut:]).extraction() == whole, cut


def test_a_scan_is_not_changed_by_reading_on() -> None:
    first = RuleScan().read(MESSAGES[:10])
    before = (first.candidates, dict(first.skipped), first.error_seen, first.previous_role)
    first.read(MESSAGES[10:])
    assert (first.candidates, dict(first.skipped), first.error_seen, first.previous_role) == before
