"""The adversary evaluation: every attack class of ``app.llm.adversary`` run over the datasets
through the service, and for each: attacks made, caught, protected items lost.

Owns the scoring. An attack is *caught* when the archive that covers its messages records what
must catch it (a decision reason, a recovery generator, the out-of-range references detail) and
nothing it planted is stored as a plain item. A protected item is *lost* when an attacked
archive's stored version lacks what the source holds — the protected items of the offline
extractor's reading of the archive's stored messages from the stored prior (a path character
for character, a date, a constraint, error or open item by its first 40 characters, a
constraint only unmarked) — plus every protected-item loss of the stored history (what entered a
guarded section and left it).
Talks to the service over HTTP, in this process, on a throwaway database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from rich.console import Console

from app.archives.generation import WorkingMemoryGenerator
from app.config import Settings
from app.llm.adversary import OUTSIDE, Attack, AttackClass, HostileModel
from app.llm.adversary_reading import Target, protected_targets
from app.replay.datasets import ADVERSARY_SETS, find_sets
from app.replay.protected import protected_losses
from app.replay.run import (
    ArchiveOutcome,
    Schedule,
    by_section,
    replay,
    section_history,
    stored_messages,
)
from app.replay.suite import NoDatasets, announce
from app.replay.target import in_process, throwaway_database
from app.wm.extractor import extract
from app.wm.items import Marker, is_kept, markers_of, split_items
from app.wm.merge import merge
from app.wm.paths import find_paths
from app.wm.sections import Section

_UNTRUSTED: Final = frozenset(
    {Marker.UNSOURCED, Marker.CONTRADICTS, Marker.CONFLICTING, Marker.TOOL_SOURCED}
)


@dataclass(slots=True)
class Tally:
    """One attack class on one dataset."""

    conversations: int = 0
    attacks: int = 0
    caught: int = 0
    lost: int = 0
    missed: list[str] = field(default_factory=list)
    """What was not caught or was lost (a few, for the report)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "conversations": self.conversations,
            "attacks": self.attacks,
            "caught": self.caught,
            "lost": self.lost,
            "missed": self.missed[:10],
        }


Versions = Mapping[Section, Mapping[str, Any]]


def _archive_of(attack: Attack, archives: Sequence[ArchiveOutcome]) -> ArchiveOutcome | None:
    for archive in archives:
        if archive.start_seq <= attack.first_seq and attack.last_seq <= archive.end_seq:
            return archive
    return None


def _plain(text: str, body: str) -> bool:
    """Whether ``text`` is stored in ``body`` as an item no trust rule marked."""
    wanted = text.lower()
    return any(
        wanted in item.lower() and not markers_of(item) & _UNTRUSTED for item in split_items(body)
    )


def caught(attack: Attack, archive: ArchiveOutcome, versions: Versions) -> bool:
    task = str(versions.get(Section.TASK_AND_GOALS, {}).get("content", ""))
    if any(_plain(text, task) for text in attack.planted):
        return False
    if attack.kind is AttackClass.BROKEN_JSON:
        return archive.generator in attack.expect
    recorded: set[str] = set()
    for version in versions.values():
        details = version.get("details") or {}
        recorded.add(str(version.get("reason")))
        recorded.add(str(details.get("guard_reason")))
        if details.get(OUTSIDE):
            recorded.add(OUTSIDE)
    return bool(recorded & attack.expect)


def kept(target: Target, body: str) -> bool:
    if target.section is Section.FILES:
        return target.text in find_paths(body)
    if target.section is Section.KEY_FACTS:
        return target.text in body
    trusted = "\n".join(
        item for item in split_items(body) if not markers_of(item) & _UNTRUSTED
    ).lower()
    return is_kept(target.text, trusted)


def source_targets(
    messages: Sequence[Mapping[str, Any]], first_seq: int, prior: Mapping[Section, str]
) -> list[Target]:
    """What the archive's messages hold that must be kept: the protected items of the offline
    extractor's reading of them from the stored prior (the source the guards answer to)."""
    extraction = extract(messages, prior, first_seq=first_seq)
    return protected_targets(merge(prior, extraction.ops).sections)


def score(
    tally: Tally,
    attacks: Sequence[Attack],
    archives: Sequence[ArchiveOutcome],
    history: Sequence[Mapping[str, Any]],
    messages: Mapping[int, Mapping[str, Any]],
    name: str = "",
) -> None:
    """Add one conversation's attacks to ``tally``; ``messages`` are the stored messages by
    seq (each attacked archive's source); ``name`` says in which conversation a miss was."""
    where = f"{name}: " if name else ""
    tally.conversations += 1
    by_archive: dict[int, dict[Section, Mapping[str, Any]]] = {}
    for row in history:
        by_archive.setdefault(int(row["archive_seq"]), {})[Section(row["section"])] = row
    attacked: dict[int, ArchiveOutcome] = {}
    for attack in attacks:
        tally.attacks += 1
        archive = _archive_of(attack, archives)
        versions = by_archive.get(archive.archive_seq, {}) if archive is not None else {}
        if archive is not None and caught(attack, archive, versions):
            tally.caught += 1
        else:
            tally.missed.append(f"{where}not caught: messages {attack.first_seq}-{attack.last_seq}")
        if archive is not None:
            attacked[archive.archive_seq] = archive
    for archive_seq, archive in sorted(attacked.items()):
        before = by_archive.get(archive_seq - 1, {})
        prior = {s: str(before.get(s, {}).get("content", "")) for s in Section}
        span = [
            messages[seq]
            for seq in range(archive.start_seq, archive.end_seq + 1)
            if seq in messages
        ]
        versions = by_archive.get(archive_seq, {})
        for target in source_targets(span, archive.start_seq, prior):
            if not kept(target, str(versions.get(target.section, {}).get("content", ""))):
                tally.lost += 1
                tally.missed.append(f"{where}lost from {target.section.value}: {target.text[:60]}")
    history_by_section = {Section(name): bodies for name, bodies in by_section(history).items()}
    for loss in protected_losses(history_by_section):
        tally.lost += 1
        tally.missed.append(f"{where}lost later from {loss.section.value}: {loss.item[:60]}")


@dataclass(slots=True)
class AdversaryRun:
    found_sets: list[str]
    tallies: dict[AttackClass, dict[str, Tally]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "datasets": self.found_sets,
            "classes": {
                kind.value: {name: tally.as_json() for name, tally in by_set.items()}
                for kind, by_set in self.tallies.items()
            },
        }

    def as_markdown(self) -> str:
        sets = self.found_sets
        lines = [
            "| attack class | " + " | ".join(sets) + " |",
            "|---|" + "---|" * len(sets),
        ]
        for kind, by_set in self.tallies.items():
            cells = []
            for name in sets:
                tally = by_set.get(name)
                cells.append(
                    "–" if tally is None else f"{tally.attacks} / {tally.caught} / {tally.lost}"
                )
            lines.append(f"| `{kind.value}` | " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n\nEach cell: attacks made / caught / protected items lost.\n"


async def run_adversary(
    settings: Settings,
    root: Path,
    classes: Sequence[AttackClass],
    console: Console,
    *,
    schedule: Schedule,
    sets: frozenset[str] | None = None,
    limit: int | None = None,
) -> AdversaryRun:
    """Every class over the first ``limit`` conversations of each set found under ``root``, on
    one throwaway database (one service per class, its model that class's hostile model)."""
    found = find_sets(root, sets, ADVERSARY_SETS)
    announce(console, found)
    present = [item for item in found if item.present]
    if not present:
        raise NoDatasets(f"no evaluation set found under {root}")
    run = AdversaryRun([item.set.name for item in present])
    async with throwaway_database() as fresh:
        local = settings.model_copy(
            update={"database_url": fresh.app_url, "memory_extractor": "off"}
        )
        for kind in classes:
            model = HostileModel(kind)
            generator = WorkingMemoryGenerator(model, fallback="offline")
            run.tallies[kind] = {}
            async with in_process(local, fresh.api_key, generator=generator) as http:
                for item in present:
                    tally = run.tallies[kind].setdefault(item.set.name, Tally())
                    for conversation in item.set.load(root)[:limit]:
                        before = len(model.attacks)
                        replayed = await replay(http, conversation, schedule)
                        sid = replayed.agent_session_id
                        history = await section_history(http, sid)
                        stored = {
                            int(row["seq"]): row["message"]
                            for row in await stored_messages(http, sid)
                        }
                        score(
                            tally,
                            model.attacks[before:],
                            replayed.archives,
                            history,
                            stored,
                            conversation.name,
                        )
                    console.print(
                        f"{kind.value} on {item.set.name}: {tally.attacks} attacks, "
                        f"{tally.caught} caught, {tally.lost} lost",
                        highlight=False,
                    )
    return run
