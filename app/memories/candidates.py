"""The value filter: which proposed memories are worth storing, and repeats within one archive.

Owns the thresholds every candidate passes, whichever extractor proposed it: enough content
words to be meaningful and findable, and a confidence at or above the minimum; what fails is
counted under its skip reason. Repeats inside one archive become one candidate citing every seq.
Pure; never looks at stored memories (``changes`` decides against those).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Final

from app.memories.records import Candidate, Extraction, SkipReason
from app.memories.text import content_words


@dataclass(frozen=True, slots=True)
class ValueConfig:
    min_confidence: float = 0.5
    min_content_words: int = 2


DEFAULT_VALUE_CONFIG: Final = ValueConfig()


def merge_repeats(candidates: list[Candidate]) -> list[Candidate]:
    """One candidate per (category, content words): the first wording, every source seq, the
    highest confidence. Order of first appearance is kept."""
    merged: dict[tuple[str, tuple[str, ...]], Candidate] = {}
    for candidate in candidates:
        key = (candidate.category.value, tuple(content_words(candidate.content)))
        earlier = merged.get(key)
        if earlier is None:
            merged[key] = candidate
            continue
        merged[key] = replace(
            earlier,
            confidence=max(earlier.confidence, candidate.confidence),
            source_seqs=tuple(sorted({*earlier.source_seqs, *candidate.source_seqs})),
        )
    return list(merged.values())


def value_filter(extraction: Extraction, config: ValueConfig = DEFAULT_VALUE_CONFIG) -> Extraction:
    """The candidates worth storing; the others counted in ``skipped`` by reason."""
    skipped: Counter[str] = Counter(extraction.skipped)
    kept: list[Candidate] = []
    for candidate in extraction.candidates:
        if len(content_words(candidate.content)) < config.min_content_words:
            skipped[SkipReason.TOO_SHORT.value] += 1
        elif candidate.confidence < config.min_confidence:
            skipped[SkipReason.LOW_CONFIDENCE.value] += 1
        else:
            kept.append(candidate)
    return Extraction(tuple(merge_repeats(kept)), dict(skipped), extraction.extractor)
