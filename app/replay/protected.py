"""Protected-item loss: what entered a guarded section and is missing from a later version.

Pure, over the stored section history (one body per archive per section, oldest first). Owns
the definition the evaluation reports: a path of Files & Context, an item of Errors &
Corrections, an open item of Open Issues, or a constraint of Task & Goals, once present, must be
in every later version — an open issue until a version closes it (``[resolved]``, ``[done]``),
a constraint until one retires it (``[lifted]``, ``[done]``). Never decides what a guard does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from app.wm.guards import is_constraint
from app.wm.items import Marker, is_kept, markers_of, normalise, split_items, strip_markers
from app.wm.paths import find_paths
from app.wm.sections import Section

_CLOSED = frozenset({Marker.RESOLVED, Marker.DONE})
_RETIRED = frozenset({Marker.LIFTED, Marker.DONE})
PROTECTED_SECTIONS = (Section.TASK_AND_GOALS, Section.FILES, Section.ERRORS, Section.OPEN_ISSUES)


@dataclass(frozen=True, slots=True)
class Loss:
    """An item present after ``entered`` (an archive seq) and absent after ``lost``."""

    section: Section
    item: str
    entered: int
    lost: int


def protected_losses(history: Mapping[Section, Sequence[tuple[int, str]]]) -> list[Loss]:
    """Every loss in ``history``: per section, ``(archive_seq, body)`` oldest first."""
    losses: list[Loss] = []
    for section in PROTECTED_SECTIONS:
        versions = list(history.get(section, ()))
        if section is Section.FILES:
            losses += _lost_paths(versions)
        elif section is Section.ERRORS:
            losses += _lost_items(versions)
        else:
            ending = _CLOSED if section is Section.OPEN_ISSUES else _RETIRED
            watch = _open_item if section is Section.OPEN_ISSUES else is_constraint
            losses += _lost_until_closed(section, versions, watch, ending)
    return losses


def _lost_paths(versions: list[tuple[int, str]]) -> list[Loss]:
    losses: list[Loss] = []
    entered: dict[str, int] = {}
    for archive_seq, body in versions:
        present = set(find_paths(body))
        for path, since in list(entered.items()):
            if path not in present:
                losses.append(Loss(Section.FILES, path, since, archive_seq))
                del entered[path]
        for path in present:
            entered.setdefault(path, archive_seq)
    return losses


def _lost_items(versions: list[tuple[int, str]]) -> list[Loss]:
    losses: list[Loss] = []
    entered: dict[str, tuple[str, int]] = {}
    for archive_seq, body in versions:
        present = {normalise(item): item for item in split_items(body)}
        for key, (item, since) in list(entered.items()):
            if key not in present:
                losses.append(Loss(Section.ERRORS, item, since, archive_seq))
                del entered[key]
        for key, item in present.items():
            entered.setdefault(key, (item, archive_seq))
    return losses


def _open_item(item: str) -> bool:
    return not markers_of(item) & _CLOSED


def _lost_until_closed(
    section: Section,
    versions: list[tuple[int, str]],
    watch: Callable[[str], bool],
    ending: frozenset[Marker],
) -> list[Loss]:
    """Watched items must stay (by the guards' snippet rule) until a version carries them under
    an ending marker; after that they may leave."""
    losses: list[Loss] = []
    watched: dict[str, tuple[str, int]] = {}
    for archive_seq, body in versions:
        items = split_items(body)
        lower = body.lower()
        for key, (item, since) in list(watched.items()):
            if not is_kept(item, lower):
                losses.append(Loss(section, item, since, archive_seq))
                del watched[key]
            elif any(is_kept(item, line.lower()) and markers_of(line) & ending for line in items):
                del watched[key]
        for item in items:
            if watch(item) and not markers_of(item) & ending:
                # Keyed without markers: a restored item is the same item as before.
                watched.setdefault(normalise(strip_markers(item)), (item, archive_seq))
    return losses
