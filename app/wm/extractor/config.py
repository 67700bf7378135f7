"""How much the offline extractor takes from one batch and where it starts consolidating.

Owns the extractor's numbers, as one frozen configuration. Never reads messages and never
decides an op: the section rules read these limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class ExtractorConfig:
    """How much the extractor takes per batch and where it starts consolidating.

    The consolidation points sit below the guard and warning thresholds (25 items, 1500 tokens)
    so that the extractor's own output never needs a size reminder.
    """

    title_chars: int = 90
    item_chars: int = 280
    tool_fact_chars: int = 320
    state_chars: int = 220
    key_facts_per_batch: int = 8
    key_facts_minimum: int = 2
    key_facts_limit_items: int = 20
    key_facts_limit_tokens: int = 1100
    digest_anchors_per_line: int = 30
    task_items_per_batch: int = 4
    task_limit_items: int = 16
    files_per_batch: int = 10
    files_limit_items: int = 20
    files_per_packed_line: int = 4
    errors_per_batch: int = 6
    issues_per_batch: int = 3


DEFAULT_EXTRACTOR_CONFIG: Final = ExtractorConfig()
