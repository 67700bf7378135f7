"""Replaying one conversation through the service: append, commit on schedule, record archives.

Owns the schedule (commit every N messages, or as soon as ``pending_tokens`` passes a
threshold; every commit waits for its working memory) and what a replay reports: each archive's
range, status, generator and guard decisions, and the final working memory. Talks only to the
HTTP API; never decides what an archive holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import httpx

from app.replay.formats import Conversation

MAX_BATCH: Final = 500
"""Messages per ``messages:batch`` request (the service's default limit)."""
THRESHOLD_STEP: Final = 8
"""Messages per request when a ``pending_tokens`` threshold is watched: a commit comes at most
this many messages after the threshold is passed."""
PLAIN_OUTCOMES: Final = frozenset({"accepted", "nothing_new"})


class ReplayError(Exception):
    """The service refused a request; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Schedule:
    every: int = 40
    """Commit after this many messages since the last commit."""
    pending_tokens: int | None = None
    """Also commit as soon as the session's ``pending_tokens`` reaches this."""
    keep: int = 10
    """``keep_recent_count`` of every commit."""
    final_commit: bool = True
    """Commit once more after the last message, so the replay ends right after a commit."""
    wait_timeout_s: float = 120.0


@dataclass(frozen=True, slots=True)
class ArchiveOutcome:
    archive_seq: int
    start_seq: int
    end_seq: int
    status: str
    generator: str | None
    wm_tokens: int | None
    decisions: list[dict[str, Any]]

    @property
    def interventions(self) -> list[dict[str, Any]]:
        """Decisions where a guard changed or refused the op (anything but plain acceptance)."""
        return [d for d in self.decisions if d.get("reason") not in PLAIN_OUTCOMES]


@dataclass(slots=True)
class Replayed:
    name: str
    agent_session_id: str
    messages: int
    archives: list[ArchiveOutcome] = field(default_factory=list)
    working_memory: Mapping[str, Any] | None = None


class Progress(Protocol):
    def appended(self, count: int) -> None: ...

    def committed(self, archive: ArchiveOutcome) -> None: ...


class _Silent:
    def appended(self, count: int) -> None:
        return None

    def committed(self, archive: ArchiveOutcome) -> None:
        return None


def _checked(response: httpx.Response, what: str) -> Any:
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail") or response.text
        except ValueError:
            detail = response.text
        raise ReplayError(f"{what} answered {response.status_code}: {detail}")
    return response.json()


async def replay(
    http: httpx.AsyncClient,
    conversation: Conversation,
    schedule: Schedule,
    *,
    progress: Progress | None = None,
    external_id: str | None = None,
) -> Replayed:
    """Feed ``conversation`` to a new agent session, committing on ``schedule``."""
    progress = progress or _Silent()
    body: dict[str, Any] = {
        "keep_recent_count": schedule.keep,
        "metadata": {"replayed_from": conversation.name},
    }
    if external_id is not None:
        body["external_id"] = external_id
    created = _checked(await http.post("/v1/sessions", json=body), "creating the agent session")
    agent_session_id = str(created["id"])
    result = Replayed(conversation.name, agent_session_id, len(conversation.messages))
    messages = conversation.messages
    since_commit = 0
    position = 0
    while position < len(messages):
        step = min(schedule.every - since_commit, MAX_BATCH)
        if schedule.pending_tokens is not None:
            step = min(step, THRESHOLD_STEP)
        batch = messages[position : position + step]
        appended = _checked(
            await http.post(
                f"/v1/sessions/{agent_session_id}/messages:batch", json={"messages": batch}
            ),
            f"appending messages {position + 1}-{position + len(batch)}",
        )
        position += len(batch)
        since_commit += len(batch)
        progress.appended(len(batch))
        due = since_commit >= schedule.every or (
            schedule.pending_tokens is not None
            and int(appended.get("pending_tokens", 0)) >= schedule.pending_tokens
        )
        if due or (schedule.final_commit and position == len(messages)):
            archive = await commit(http, agent_session_id, schedule)
            since_commit = 0
            if archive is not None:
                result.archives.append(archive)
                progress.committed(archive)
    current = await http.get(f"/v1/sessions/{agent_session_id}/working-memory")
    if current.status_code == 200:
        result.working_memory = current.json()
    return result


async def commit(
    http: httpx.AsyncClient, agent_session_id: str, schedule: Schedule
) -> ArchiveOutcome | None:
    """One commit that waits for its working memory; ``None`` when there was nothing to archive."""
    answer = _checked(
        await http.post(
            f"/v1/sessions/{agent_session_id}/commit",
            json={
                "keep_recent_count": schedule.keep,
                "wait": True,
                "wait_timeout_s": schedule.wait_timeout_s,
            },
        ),
        "committing",
    )
    archive = answer.get("archive")
    if archive is None:
        return None
    working_memory = answer.get("working_memory") or {}
    return ArchiveOutcome(
        archive_seq=int(archive["archive_seq"]),
        start_seq=int(archive["start_seq"]),
        end_seq=int(archive["end_seq"]),
        status=str(archive["status"]),
        generator=archive.get("generator"),
        wm_tokens=archive.get("wm_tokens"),
        decisions=list(working_memory.get("decisions", [])),
    )


async def stored_messages(http: httpx.AsyncClient, agent_session_id: str) -> list[dict[str, Any]]:
    """Every stored message of the agent session (``MessageRead`` bodies), oldest first."""
    found: list[dict[str, Any]] = []
    cursor: int | None = 0
    while cursor is not None:
        page = _checked(
            await http.get(
                f"/v1/sessions/{agent_session_id}/messages",
                params={"after_seq": cursor, "limit": 1000},
            ),
            "reading messages",
        )
        found += page["items"]
        cursor = page["next_after_seq"]
    return found


async def section_history(http: httpx.AsyncClient, agent_session_id: str) -> list[dict[str, Any]]:
    """Every stored section version of the agent session (``wm_section_versions``), in order."""
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 700}
    while True:
        page = _checked(
            await http.get(
                f"/v1/sessions/{agent_session_id}/working-memory/history", params=params
            ),
            "reading the section history",
        )
        found += page["items"]
        if page.get("next_after_archive_seq") is None:
            return found
        params = {
            "limit": 700,
            "after_archive_seq": page["next_after_archive_seq"],
            "after_position": page["next_after_position"],
        }


def by_section(versions: Sequence[Mapping[str, Any]]) -> dict[str, list[tuple[int, str]]]:
    """Section name → ``(archive_seq, content)`` oldest first."""
    grouped: dict[str, list[tuple[int, str]]] = {}
    for row in sorted(versions, key=lambda row: (row["archive_seq"], row["position"])):
        grouped.setdefault(str(row["section"]), []).append(
            (int(row["archive_seq"]), str(row["content"]))
        )
    return grouped
