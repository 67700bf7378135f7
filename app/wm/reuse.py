"""What the batches of one archive work out once and share.

An archive is merged batch by batch, each batch's working memory the next one's prior, and most
items are the same from one batch to the next; so are the archive's messages. What an item's
attribution and trust check read of those messages (the roles of its seqs, the messages a
constraint quotes word for word) depends on the item and the messages alone: it is worked out the
first time and looked up after. So are the sources the attribution gave: an item a batch left
alone keeps its entry, and a section it left alone its sources. A ``Reuse`` holds all this for the
evidence and roles it was made with; given any others, the merge works everything out afresh
(``for_evidence``, ``for_roles``). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain, repeat

from app.wm.references import Seqs


@dataclass(eq=False, slots=True)
class Reuse:
    """One archive's shared findings: ``evidence`` (seq → a user message stating a constraint,
    normalised) and ``roles`` (seq → who the message is), which no batch changes."""

    evidence: Mapping[int, str] = field(default_factory=dict)
    roles: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    _quoted: dict[str, Seqs] = field(default_factory=dict, init=False, repr=False)
    _who: dict[Seqs, frozenset[str]] = field(default_factory=dict, init=False, repr=False)
    _made: dict[int, object] = field(default_factory=dict, init=False, repr=False)
    _attributed: dict[str, tuple[object, ...]] = field(default_factory=dict, init=False, repr=False)

    def quoted(self, key: str) -> Seqs:
        """The evidence messages whose text holds ``key`` (an item's ``source_key``), in seq
        order of the evidence."""
        found = self._quoted.get(key)
        if found is None:
            found = tuple(seq for seq, text in self.evidence.items() if key in text)
            self._quoted[key] = found
        return found

    def who(self, seqs: Seqs) -> frozenset[str]:
        """The roles of the messages ``seqs`` name (those ``roles`` knows)."""
        found = self._who.get(seqs)
        if found is None:
            found = frozenset(chain.from_iterable(map(self.roles.get, seqs, repeat(()))))
            self._who[seqs] = found
        return found

    def made(self, entry: object) -> bool:
        """Whether this reuse's attribution made ``entry`` (the very object)."""
        return self._made.get(id(entry)) is entry

    def attributed(self, body: str) -> tuple[object, ...] | None:
        """The sources this reuse last attributed to ``body``."""
        return self._attributed.get(body)

    def keep_attributed(self, body: str, sources: tuple[object, ...]) -> None:
        """Keep what the attribution made of ``body``: the sources, and each entry."""
        self._attributed[body] = sources
        for entry in sources:
            self._made[id(entry)] = entry


def for_evidence(reuse: Reuse | None, evidence: Mapping[int, str]) -> Reuse:
    """``reuse`` when it was made for this very ``evidence``, else a new one for this call."""
    if reuse is not None and reuse.evidence is evidence:
        return reuse
    return Reuse(evidence=evidence)


def for_roles(reuse: Reuse | None, roles: Mapping[int, tuple[str, ...]]) -> Reuse:
    """``reuse`` when it was made for these very ``roles``, else a new one for this call."""
    if reuse is not None and reuse.roles is roles:
        return reuse
    return Reuse(roles=roles)
