"""The stable strings of merge decisions: reason codes, guard names, recovery paths, detail keys.

Owns every code stored with a section version and returned by the API, in one place; renaming one
is an API change. Never decides anything: the guards and the merge pick from these lists.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class Reason(StrEnum):
    """Why a section ended up with its applied op."""

    ACCEPTED = "accepted"
    MISSING_OP = "missing_op"
    INVALID_OP = "invalid_op"
    NOTHING_NEW = "nothing_new"
    UNRECOVERABLE_ARGUMENTS = "unrecoverable_arguments"
    TITLE_EMPTY = "title_empty"
    TITLE_SINGLE_LINE = "title_single_line"
    TITLE_NO_OVERLAP = "title_no_overlap"
    OVERSIZED_THROTTLED = "oversized_throttled"
    EMERGENCY_SENTINEL = "emergency_sentinel"
    EMERGENCY_HARD_STOP = "emergency_hard_stop"
    KEY_FACTS_RATIO = "key_facts_ratio"
    KEY_FACTS_ANCHOR_COVERAGE = "key_facts_anchor_coverage"
    CONSTRAINT_RESTORED = "constraint_restored"
    UNSOURCED_CONSTRAINT = "unsourced_constraint"
    FILES_PATH_REGRESSION = "files_path_regression"
    ERRORS_APPEND_ONLY = "errors_append_only"
    OPEN_ISSUES_RESTORED = "open_issues_restored"
    SOURCE_RESTORED = "source_restored"
    CONTRADICTS_SOURCE = "contradicts_source"
    CONFLICTING_CONSTRAINT = "conflicting_constraint"
    TOOL_SOURCED_INSTRUCTION = "tool_sourced_instruction"


class Guard(StrEnum):
    """A section's guard (DESIGN 3.5), named in a decision when one of its rules was evaluated."""

    TITLE_STABILITY = "title_stability"
    CONSOLIDATION_ANTI_BLOAT = "consolidation_anti_bloat"
    CONSTRAINT_RETENTION = "constraint_retention"
    NO_PATH_REGRESSION = "no_path_regression"
    APPEND_ONLY = "append_only"
    NO_SILENT_DROP = "no_silent_drop"
    SOURCE_RETENTION = "source_retention"


class RecoveryPath(StrEnum):
    """How tool arguments were read (DESIGN 3.6): stored with the archive's generator."""

    PARSED = "parsed"
    REPAIRED = "repaired"
    SCANNED = "scanned"
    UNRECOVERABLE = "unrecoverable"


# Details each reason carries (all JSON values), for the audit queries and the API:
#   any decision           schema_violation (validator message), problem (why an op is unusable),
#                          sentinel_removed (a Key Facts op carried the guard's sentinel)
#   title_*                old_words | shared_words
#   Key Facts APPEND       size_state, items, tokens, fresh, accepted (when throttled)
#   Key Facts UPDATE       old_items, new_items, ratio, anchors, anchors_covered, coverage,
#                          missing_anchors (on rejection), salvage {applied, reason, items}
#   constraint_restored, open_issues_restored       restored (the lines added back)
#   unsourced_constraint, contradicts_source, conflicting_constraint, tool_sourced_instruction
#                          the items each rule marked (unsourced, contradicts_source,
#                          conflicting_constraint, tool_sourced; any of them, the reason the
#                          first of them), and restored when guard C also acted
#   any decision, with provenance   references_outside_range (seqs a reference named that the
#                          archive and its prior do not cover; stripped, never kept)
#   files_path_regression  lost_paths, added_paths
#   errors_append_only     appended (how many fresh items)
#   source_restored        source_restored (the lines the shadow prior gave back), guard_reason
#                          (the reason the section's own guard gave, when not accepted)
# The keys that other code reads are named here.
DETAIL_SCHEMA_VIOLATION: Final = "schema_violation"
DETAIL_PROBLEM: Final = "problem"
DETAIL_SALVAGE: Final = "salvage"
DETAIL_SENTINEL_REMOVED: Final = "sentinel_removed"
DETAIL_UNSOURCED: Final = "unsourced"
DETAIL_CONTRADICTS: Final = "contradicts_source"
DETAIL_CONFLICTING: Final = "conflicting_constraint"
DETAIL_TOOL_SOURCED: Final = "tool_sourced"
DETAIL_OUTSIDE_RANGE: Final = "references_outside_range"
DETAIL_SOURCE_RESTORED: Final = "source_restored"
DETAIL_SUPERSEDED_REASON: Final = "guard_reason"
