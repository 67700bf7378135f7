"""What one archive's batches share: the same results as working everything out afresh, and
never a finding made for other messages; Key Facts' anchors found part by part as in one scan."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.wm.anchors import anchors
from app.wm.authority import constraint_evidence, message_roles
from app.wm.extractor import extract
from app.wm.guards import body_anchors
from app.wm.merge import MergeResult, merge
from app.wm.provenance import ItemSource, Provenance, SectionSources, attribute
from app.wm.references import SeqRange
from app.wm.reuse import Reuse, for_evidence, for_roles
from app.wm.sections import Section
from app.wm.trust import mark_unsourced

# --- Key Facts' anchors, part by part ---------------------------------------------------------

BODIES = [
    "",
    "- Flight UA123 departs 2024-05-20",
    # a date, a quantity, a clock time across a bare line break: one anchor, as in one scan
    "We met on 12\nMarch 2024",
    "- stayed 3\n  nights\n- lunch at 7\npm",
    # the same split by a bullet or a heading: no anchor crosses it
    "- on 12\n- March 2024",
    "- stayed 3\n- nights\n### 7\n- pm today",
    # edges: a version or an amount at the start of a part, a backticked identifier per line
    "- v2.3.1 shipped\n- $1,200.50 paid\n- `make test`\n-`x`",
    "## Notes\n\n- Alice decided\n-Bob chose 2024-01-02\n\n- 5 kids",
]

FRAGMENTS = [
    "12", "3", "7", "2024", "2024-05-20", "March", "may", "kids", "nights", "pm", "am", ":30",
    "$1,200", ".50", "v2.3", "`id`", "`", "Alice", "because", "the", ",", "\n", "\n-", "\n- ",
    "\n#", "\n  ", "\n\n", " ", "\t", "\u2028", "-", "_", "é", "Σ",
]  # fmt: skip


@pytest.mark.parametrize("body", BODIES)
def test_body_anchors_are_the_anchors_of_the_whole_body(body: str) -> None:
    assert body_anchors(body) == anchors(body)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=24).map("".join))
def test_body_anchors_match_one_scan_on_any_text(body: str) -> None:
    assert body_anchors(body) == anchors(body)


# --- sharing between batches ------------------------------------------------------------------

EVIDENCE = {2: "never push to main on a friday", 5: "always run the tests before a release"}
ROLES = {2: ("user",), 3: ("tool",), 5: ("user",)}


def test_reuse_is_taken_only_for_the_messages_it_was_made_for() -> None:
    reuse = Reuse(EVIDENCE, ROLES)
    assert for_evidence(reuse, EVIDENCE) is reuse
    assert for_roles(reuse, ROLES) is reuse
    other_evidence: Mapping[int, str] = dict(EVIDENCE)
    other_roles: Mapping[int, tuple[str, ...]] = dict(ROLES)
    # Equal is not enough: only the very mappings it was made with (which no batch changes).
    assert for_evidence(reuse, other_evidence) is not reuse
    assert for_evidence(reuse, other_evidence).evidence is other_evidence
    assert for_roles(reuse, other_roles) is not reuse
    assert for_roles(reuse, other_roles).roles is other_roles
    assert for_evidence(None, EVIDENCE).evidence is EVIDENCE
    assert for_roles(None, ROLES).roles is ROLES


def test_reuse_finds_quotes_and_roles_once() -> None:
    reuse = Reuse(EVIDENCE, ROLES)
    assert reuse.quoted("push to main") == (2,)
    assert reuse.quoted("nothing like it") == ()
    assert reuse.who((2, 3, 9)) == frozenset({"user", "tool"})
    assert reuse.who(()) == frozenset()
    # Found once: a second look-up is the same object.
    assert reuse.quoted("push to main") is reuse.quoted("push to main")
    assert reuse.who((2, 3, 9)) is reuse.who((2, 3, 9))


def test_a_reuse_made_for_other_messages_never_lends_its_findings() -> None:
    """An uncited constraint quoting message 2 word for word is the user's; under other
    messages whose 2 only says it in other words it is unsourced, whatever a reuse made for the
    first messages found."""
    body = "- Never push to main on a Friday"
    sources: SectionSources = (ItemSource("Never push to main on a Friday"),)
    stale = Reuse(EVIDENCE, ROLES)
    quoted = mark_unsourced(body, sources, "", (), EVIDENCE, reuse=stale)
    assert quoted.marked == {}
    assert quoted.sources[0].evidence == (2,)
    other = {2: "on a friday never push anything to main"}
    checked = mark_unsourced(body, sources, "", (), other, reuse=stale)
    assert checked.body == "- [unsourced] Never push to main on a Friday"
    assert checked == mark_unsourced(body, sources, "", (), other)
    # The same for roles: who message 3 is comes from the roles given, never from the reuse.
    cited = {"build failed": (3,)}
    assert attribute("- Build failed", cited, (), ROLES, reuse=stale)[0].authority == ("tool",)
    as_user = attribute("- Build failed", cited, (), {3: ("user",)}, reuse=stale)
    assert as_user[0].authority == ("user",)


CONVERSATION = [
    {"role": "user", "content": "Fix the crash in app/models/user.py. Never touch prod."},
    {"role": "assistant", "content": "Traceback ends in KeyError: email. I will add a default."},
    {"role": "user", "content": "Good. Is a migration needed? We decided on 2024-05-20."},
    {"role": "assistant", "content": "No migration. I edited app/models/user.py and tests/a.py."},
    {"role": "user", "content": "Always run the tests before a release. Alice owns the deploy."},
    {"role": "tool", "content": "Error: test_user failed with AssertionError in tests/a.py"},
    {"role": "user", "content": "Don't skip that test. Use Poetry instead of pip."},
    {"role": "assistant", "content": "Fixed: tests pass. TODO: update the Dockerfile."},
    {"role": "user", "content": "Never push to main on a Friday. Bob chose the 3 pm slot."},
    {"role": "assistant", "content": "Noted. Renamed app/models/user.py to app/models/users.py."},
]


def _batches(reuse: Reuse | None) -> list[MergeResult]:
    evidence = constraint_evidence(CONVERSATION, 1)
    roles = message_roles(CONVERSATION, 1, frozenset({5}))
    shared = None if reuse is None else Reuse(evidence, roles)
    sections: Mapping[Section, str] = {}
    sources: Mapping[Section, SectionSources] = {}
    results: list[MergeResult] = []
    for start in range(0, len(CONVERSATION), 2):
        part = CONVERSATION[start : start + 2]
        extraction = extract(part, sections, first_seq=start + 1)
        result = merge(
            sections,
            extraction.ops,
            provenance=Provenance(
                SeqRange(1, start + len(part)),
                prior=sources,
                cited=extraction.cited,
                evidence=evidence,
                roles=roles,
                reuse=shared,
            ),
        )
        results.append(result)
        sections, sources = result.sections, result.sources
    return results


def test_batches_sharing_a_reuse_give_what_fresh_merges_give() -> None:
    shared = _batches(Reuse())
    fresh = _batches(None)
    assert [result.to_dict() for result in shared] == [result.to_dict() for result in fresh]
    assert any(result.sources[Section.TASK_AND_GOALS] for result in shared)


def test_a_body_given_back_with_its_own_sources_keeps_them() -> None:
    """A section no batch changed is not attributed again: the same sources, as a fresh
    attribution would give them; anything cited, a repeated item or other sources, and it is."""
    roles = {2: ("user",), 3: ("tool",)}
    reuse = Reuse(roles=roles)
    body = "- Build failed\n- Tests pass"
    cited = {"build failed": (3,), "tests pass": (2, 3)}
    first = attribute(body, cited, (), roles, reuse=reuse)
    again = attribute(body, {}, first, roles, reuse=reuse)
    assert again is first
    assert again == attribute(body, {}, first, roles)
    # Cited again: the new seqs join.
    more = attribute(body, {"tests pass": (4,)}, first, roles, reuse=reuse)
    assert more[1].seqs == (2, 3, 4)
    assert more == attribute(body, {"tests pass": (4,)}, first, roles)
    # The same sources given for another body, or equal sources that are not the ones given.
    other = "- Build failed\n- Tests pass\n- Build failed"
    assert attribute(other, {}, first, roles, reuse=reuse) == attribute(other, {}, first, roles)
    copied = tuple(ItemSource(e.item, e.seqs, authority=e.authority) for e in more)
    assert attribute(body, {}, copied, roles, reuse=reuse) is not copied


def test_a_repeated_item_is_attributed_again() -> None:
    roles = {2: ("user",)}
    reuse = Reuse(roles=roles)
    body = "- Build failed\n- [resolved] Build failed"
    first = attribute(body, {}, (), roles, reuse=reuse)
    again = attribute(body, {}, first, roles, reuse=reuse)
    assert again is not first
    assert again == attribute(body, {}, first, roles)


def test_items_a_batch_left_alone_keep_their_entries() -> None:
    """Of a body the batch changed, each item it left alone keeps its entry (one, made by this
    archive's attribution, nothing cited, nothing absorbed); the others are attributed again,
    as a fresh attribution would."""
    roles = {2: ("user",), 3: ("tool",), 4: ("assistant",)}
    reuse = Reuse(roles=roles)
    first = attribute(
        "- Build failed\n- Tests pass", {"build failed": (3,), "tests pass": (2,)}, (), roles,
        reuse=reuse,
    )  # fmt: skip
    body = "- [resolved] Build failed\n- Tests pass\n- Deploy at noon"
    cited = {"deploy at noon": (4,)}
    second = attribute(body, cited, first, roles, reuse=reuse)
    assert second == attribute(body, cited, first, roles)
    assert second[1] is first[1]
    assert second[0] == ItemSource("[resolved] Build failed", (3,), authority=("tool",))
    # Entries it did not make are attributed again (here: their seqs' roles come back).
    copied = tuple(ItemSource(e.item, e.seqs) for e in first)
    third = attribute("- Build failed\n- Tests pass", {}, copied, roles, reuse=reuse)
    assert third == first
