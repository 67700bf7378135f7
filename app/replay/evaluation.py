"""The retention evaluation of one conversation: replay it, then score what each context keeps.

Owns the measurement of DESIGN 17 for one conversation: at each budget, anchor recall by kind of
the default context, the filled context and truncation at the same budget; protected-item loss
over the stored section history; compression, working-memory tokens per section, generator mix
and a determinism hash, with the offline extractor re-run in process over the same archives to
check it. Talks to the service over HTTP; the verdicts over many conversations are ``report``'s.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

import httpx

from app.archives.generation import WorkingMemoryGenerator
from app.archives.working_memory import WorkingMemory
from app.replay.anchors import Anchor, anchors_of
from app.replay.formats import Conversation
from app.replay.protected import Loss, protected_losses
from app.replay.run import (
    Progress,
    Replayed,
    ReplayError,
    Schedule,
    by_section,
    replay,
    section_history,
    stored_messages,
)
from app.replay.scoring import Haystack, Recall, recall, truncation
from app.sessions.records import StoredMessage
from app.wm.items import Marker
from app.wm.sections import SECTIONS, Section
from app.wm.tokens import count_tokens

Mode = Literal[
    "truncation", "default", "filled", "cleared", "filled_cleared", "pinned", "filled_pinned"
]
MODES: Final[tuple[Mode, ...]] = ("truncation", "default", "filled")
FEATURE_MODES: Final[tuple[Mode, ...]] = ("cleared", "filled_cleared", "pinned", "filled_pinned")
"""With ``features``: the default and filled contexts with tool-result clearing on, and with the
conversation's first user message pinned (its exact text)."""
DEFAULT_BUDGETS: Final = (2_000, 4_000, 8_000)


@dataclass(frozen=True, slots=True)
class EvalOptions:
    schedule: Schedule = field(default_factory=lambda: Schedule(every=40, keep=10))
    budgets: tuple[int, ...] = DEFAULT_BUDGETS
    reserve_tokens: int = 0
    """The whole budget goes to the context: truncation gets all of it too."""
    features: bool = False
    """Also score ``FEATURE_MODES`` (clearing keeping ``clear_keep`` results, and a pin)."""
    clear_keep: int = 3


@dataclass(frozen=True, slots=True)
class Scored:
    """One context (or truncation) at one budget: tokens sent and recall by anchor kind."""

    tokens: int
    recall: Mapping[str, Recall]
    saved: int = 0
    """Tokens clearing saved in this context (its ``stats.clearing.tokens_saved``)."""

    @property
    def share(self) -> float | None:
        return self.recall["all"].share

    def as_json(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "recall": {kind: _round(value.share) for kind, value in sorted(self.recall.items())},
            "found": self.recall["all"].found,
            "anchors": self.recall["all"].total,
            **({"tokens_saved": self.saved} if self.saved else {}),
        }


@dataclass(frozen=True, slots=True)
class ConversationResult:
    name: str
    set: str
    agent_session_id: str
    messages: int
    history_tokens: int
    archives: int
    generators: Mapping[str, int]
    interventions: Mapping[str, int]
    """Guard decisions other than plain acceptance, by reason."""
    wm_tokens: int
    wm_section_tokens: Mapping[str, int]
    anchors: int
    unreachable_anchors: int
    scores: Mapping[int, Mapping[Mode, Scored]]
    default_context_tokens: int
    """The context at the endpoint's default budget, as a share of ``history_tokens`` below."""
    filled_window_tokens: int
    """The same context filled: what ``fill`` would cost a caller passing its whole window."""
    losses: Sequence[Loss]
    unsourced: Sequence[str]
    """Task & Goals items the service stored ``[unsourced]``, each once."""
    determinism_hash: str
    reproduced: bool | None
    """The offline extractor re-run in process over the same archives gave the same working
    memory (``None`` when a model produced some archive)."""

    @property
    def default_context_share(self) -> float:
        return self.default_context_tokens / self.history_tokens if self.history_tokens else 0.0

    @property
    def filled_window_share(self) -> float:
        return self.filled_window_tokens / self.history_tokens if self.history_tokens else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "set": self.set,
            "agent_session_id": self.agent_session_id,
            "messages": self.messages,
            "history_tokens": self.history_tokens,
            "archives": self.archives,
            "generators": dict(sorted(self.generators.items())),
            "guard_interventions": dict(sorted(self.interventions.items())),
            "wm_tokens": self.wm_tokens,
            "wm_section_tokens": dict(self.wm_section_tokens),
            "compression": _round(self.history_tokens / self.wm_tokens if self.wm_tokens else None),
            "default_context_share": _round(self.default_context_share),
            "filled_window_share": _round(self.filled_window_share),
            "anchors": self.anchors,
            "unreachable_anchors": self.unreachable_anchors,
            "budgets": {
                str(budget): {mode: scored.as_json() for mode, scored in modes.items()}
                for budget, modes in self.scores.items()
            },
            "protected_loss": len(self.losses),
            "unsourced_items": list(self.unsourced),
            "protected_lost_items": [
                {
                    "section": loss.section.value,
                    "item": loss.item,
                    "entered": loss.entered,
                    "lost": loss.lost,
                }
                for loss in self.losses[:20]
            ],
            "determinism_hash": self.determinism_hash,
            "reproduced": self.reproduced,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _stored(rows: Sequence[Mapping[str, Any]]) -> list[StoredMessage]:
    return [
        StoredMessage(
            seq=int(row["seq"]),
            role=row["role"],
            turn=int(row["turn"]),
            message=row["message"],
            token_count=int(row["token_count"]),
            metadata=row.get("metadata"),
            created_at=datetime.fromisoformat(str(row["created_at"])),
        )
        for row in rows
    ]


async def _context(
    http: httpx.AsyncClient, agent_session_id: str, params: Mapping[str, Any]
) -> Mapping[str, Any]:
    response = await http.get(f"/v1/sessions/{agent_session_id}/context", params=dict(params))
    if response.status_code != 200:
        raise ReplayError(f"the context answered {response.status_code}: {response.text}")
    body: Mapping[str, Any] = response.json()
    return body


def _scored_context(body: Mapping[str, Any], anchors: Sequence[Anchor]) -> Scored:
    hay = Haystack.of(body["messages"], str(body.get("system_prompt_addition", "")))
    clearing = body["stats"].get("clearing") or {}
    return Scored(
        int(body["tokens"]["total"]), recall(anchors, hay), int(clearing.get("tokens_saved", 0))
    )


async def _pin_first_user_message(
    http: httpx.AsyncClient, agent_session_id: str, history: Sequence[StoredMessage]
) -> bool:
    """Pin the first user message the pin limit admits (the task, as a user would pin it)."""
    for message in history:
        if message.role == "user":
            response = await http.post(
                f"/v1/sessions/{agent_session_id}/pins", json={"message_seq": message.seq}
            )
            if response.status_code == 201:
                return True
    return False


def _unsourced(versions: Sequence[Mapping[str, Any]]) -> list[str]:
    found: dict[str, None] = {}
    for version in versions:
        if version.get("section") == Section.TASK_AND_GOALS.value:
            for line in str(version.get("content") or "").splitlines():
                if Marker.UNSOURCED.value in line:
                    found.setdefault(line.lstrip("- ").strip(), None)
    return list(found)


async def evaluate(
    http: httpx.AsyncClient,
    conversation: Conversation,
    set_name: str,
    options: EvalOptions,
    *,
    progress: Progress | None = None,
) -> ConversationResult:
    replayed = await replay(http, conversation, options.schedule, progress=progress)
    sid = replayed.agent_session_id
    history = _stored(await stored_messages(http, sid))
    everything = Haystack.of([message.message for message in history])
    every_anchor = anchors_of(conversation)
    anchors = [anchor for anchor in every_anchor if everything.holds(anchor)]
    scores: dict[int, dict[Mode, Scored]] = {}
    for budget in options.budgets:
        params = {"token_budget": budget, "reserve_tokens": options.reserve_tokens}
        usable = budget - options.reserve_tokens
        cut = truncation(history, usable)
        scores[budget] = {
            "truncation": Scored(cut.tokens, recall(anchors, Haystack.of(cut.messages))),
            "default": _scored_context(await _context(http, sid, params), anchors),
            "filled": _scored_context(await _context(http, sid, {**params, "fill": True}), anchors),
        }
        if options.features:
            cleared = {**params, "clear_tool_results": options.clear_keep}
            scores[budget]["cleared"] = _scored_context(await _context(http, sid, cleared), anchors)
            scores[budget]["filled_cleared"] = _scored_context(
                await _context(http, sid, {**cleared, "fill": True}), anchors
            )
    # At the endpoint's default budget: where "the context is at most a fifth of the history" is
    # read, and what fill would cost a caller that passes its whole window.
    full = await _context(http, sid, {})
    full_filled = await _context(http, sid, {"fill": True})
    if options.features and await _pin_first_user_message(http, sid, history):
        for budget in options.budgets:
            params = {"token_budget": budget, "reserve_tokens": options.reserve_tokens}
            scores[budget]["pinned"] = _scored_context(await _context(http, sid, params), anchors)
            scores[budget]["filled_pinned"] = _scored_context(
                await _context(http, sid, {**params, "fill": True}), anchors
            )
    versions = await section_history(http, sid)
    grouped = by_section(versions)
    history_by_section = {section: grouped.get(section.value, []) for section in SECTIONS}
    final = replayed.working_memory or {}
    sections = {str(k): str(v) for k, v in (final.get("sections") or {}).items()}
    generators = Counter(str(a.generator) for a in replayed.archives)
    interventions = Counter(
        str(d.get("reason")) for archive in replayed.archives for d in archive.interventions
    )
    return ConversationResult(
        name=conversation.name,
        set=set_name,
        agent_session_id=sid,
        messages=len(history),
        history_tokens=int(full["tokens"]["history_total"]),
        archives=len(replayed.archives),
        generators=dict(generators),
        interventions=dict(interventions),
        wm_tokens=int(final.get("tokens") or 0),
        wm_section_tokens={name: count_tokens(body) for name, body in sections.items()},
        anchors=len(anchors),
        unreachable_anchors=len(every_anchor) - len(anchors),
        scores=scores,
        default_context_tokens=int(full["tokens"]["total"]),
        filled_window_tokens=int(full_filled["tokens"]["total"]),
        losses=protected_losses(history_by_section),
        unsourced=_unsourced(versions),
        determinism_hash=_history_hash(versions),
        reproduced=await _reproduced(replayed, history, versions),
    )


def _history_hash(versions: Sequence[Mapping[str, Any]]) -> str:
    """sha256 over every stored section version in order: same input, same hash."""
    digest = hashlib.sha256()
    for row in sorted(versions, key=lambda row: (row["archive_seq"], row["position"])):
        digest.update(f"{row['archive_seq']}\x1f{row['section']}\x1f{row['content']}\x1e".encode())
    return digest.hexdigest()


async def _reproduced(
    replayed: Replayed, history: Sequence[StoredMessage], versions: Sequence[Mapping[str, Any]]
) -> bool | None:
    """Whether the offline extractor, run here over the same archive ranges, stores the same
    section versions the service stored (only when the service used it for every archive)."""
    done = [a for a in replayed.archives if a.status == "done"]
    if (
        not done
        or any(a.generator != "offline" for a in done)
        or len(done) != len(replayed.archives)
    ):
        return None
    generator = WorkingMemoryGenerator(None)
    prior = WorkingMemory.empty()
    rebuilt: list[dict[str, Any]] = []
    for archive in done:
        messages = [dict(m.message) for m in history[archive.start_seq - 1 : archive.end_seq]]
        generated = await generator.generate(
            prior, messages, seqs=range(archive.start_seq, archive.end_seq + 1)
        )
        sections = generated.result.sections
        rebuilt += [
            {
                "archive_seq": archive.archive_seq,
                "section": s.value,
                "position": n,
                "content": sections[s],
            }
            for n, s in enumerate(SECTIONS, start=1)
        ]
        prior = WorkingMemory(
            archive.archive_seq, archive.end_seq, sections, sources=generated.result.sources
        )
    return _history_hash(rebuilt) == _history_hash(versions)
