"""Reading an OpenViking workspace from disk into ``records`` values.

Owns the file layout: where sessions are, which files say what, how archives are ordered and
what their status is, where externalized tool outputs live. A malformed line or file is
reported with its path (and line) and skipped; everything else is read. Never touches the
database and never writes a file.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Final, cast

from app.importer.openviking.overview import read_overview
from app.importer.openviking.parts import InvalidLine, ToolCallIds, convert_line, parse_time
from app.importer.openviking.records import (
    NO_OVERVIEW,
    OvArchive,
    OverviewKind,
    OvMessage,
    OvSession,
    Problem,
    ProblemKind,
    SessionRef,
)
from app.models import ArchiveStatus
from app.validation import replace_unstorable

ARCHIVE_NAME: Final = re.compile(r"^archive_(\d+)$")
ERROR_STAGE_CHARS: Final = 32
ERROR_CHARS: Final = 2000


class NotAWorkspace(Exception):
    """The directory holds no ``viking/<account>/user/<user>/sessions/`` folder."""


def workspace_root(directory: Path) -> Path:
    """The ``viking`` folder of a workspace (``directory/viking``, or ``directory`` itself)."""
    for root in (directory / "viking", directory):
        if root.is_dir() and any(root.glob("*/user/*/sessions")):
            return root
    raise NotAWorkspace(
        f"{directory} is not an OpenViking workspace: no viking/<account>/user/<user>/sessions/"
    )


def _folders(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))


def find_sessions(
    directory: Path, *, account: str | None = None, user: str | None = None
) -> tuple[list[SessionRef], list[Problem]]:
    """Every session folder (optionally of one account and one user), in path order."""
    root = workspace_root(directory)
    refs: list[SessionRef] = []
    problems: list[Problem] = []
    for account_dir in _folders(root):
        if account is not None and account_dir.name != account:
            continue
        for user_dir in _folders(account_dir / "user"):
            if user is not None and user_dir.name != user:
                continue
            for session_dir in _folders(user_dir / "sessions"):
                path = session_dir.relative_to(directory).as_posix()
                markers = ("messages.jsonl", ".meta.json", "history")
                if not any((session_dir / name).exists() for name in markers):
                    problems.append(
                        Problem(
                            path,
                            None,
                            ProblemKind.NOT_A_SESSION,
                            "no messages.jsonl, .meta.json or history/; skipped",
                        )
                    )
                    continue
                refs.append(
                    SessionRef(account_dir.name, user_dir.name, session_dir.name, session_dir, path)
                )
    return refs, problems


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _keep_constant(name: str) -> str:
    """JSON's ``NaN`` and ``Infinity`` are not valid in Postgres ``jsonb``: kept as text."""
    return name


class _SessionReader:
    """Reads one session folder; collects problems and the digest of every byte it read."""

    def __init__(self, ref: SessionRef, base: Path, max_message_bytes: int) -> None:
        self.ref = ref
        self.base = base
        self.max_message_bytes = max_message_bytes
        self.problems: list[Problem] = []
        # The digest names each file from the workspace's ``viking`` folder, so the identity of
        # a session does not depend on which folder was named; the second one names it from the
        # folder above, as runs that named the workspace folder itself once stored it.
        self.digest = hashlib.sha256()
        self.named_above = hashlib.sha256()
        self.root_name = f"{ref.account}/user/{ref.user}/sessions/{ref.session_id}"
        self.ids = ToolCallIds()
        self.seen: set[str] = set()
        self.last_time: datetime | None = None

    def rel(self, path: Path) -> str:
        return path.relative_to(self.base).as_posix()

    def report(self, path: Path, line: int | None, kind: ProblemKind, detail: str) -> None:
        self.problems.append(Problem(self.rel(path), line, kind, detail))

    def read(self, path: Path) -> bytes | None:
        if not path.is_file():
            return None
        data = path.read_bytes()
        inside = path.relative_to(self.ref.directory).as_posix()
        name = f"{self.root_name}/{inside}".encode()
        above = b"viking/" + name
        self.digest.update(len(name).to_bytes(8, "big") + name)
        self.digest.update(len(data).to_bytes(8, "big") + data)
        self.named_above.update(len(above).to_bytes(8, "big") + above)
        self.named_above.update(len(data).to_bytes(8, "big") + data)
        return data

    def text(self, path: Path) -> str | None:
        data = self.read(path)
        if data is None:
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            self.report(path, None, ProblemKind.UNSTORABLE_TEXT, "not UTF-8; bytes replaced")
        cleaned = str(replace_unstorable(text))
        if cleaned != text:
            self.report(path, None, ProblemKind.UNSTORABLE_TEXT, "NUL characters replaced")
        return cleaned

    def json_object(self, path: Path) -> Mapping[str, Any] | None:
        """A JSON object file; ``None`` (reported) when present but not one."""
        text = self.text(path)
        if text is None:
            return None
        try:
            value = json.loads(text, parse_constant=_keep_constant)
        except json.JSONDecodeError as error:
            self.report(path, None, ProblemKind.INVALID_JSON, f"not JSON: {error.msg}; ignored")
            return None
        if not isinstance(value, dict):
            self.report(path, None, ProblemKind.INVALID_JSON, "not a JSON object; ignored")
            return None
        cleaned = replace_unstorable(value)
        if cleaned != value:
            self.report(path, None, ProblemKind.UNSTORABLE_TEXT, "NUL characters replaced")
        return cast(dict[str, Any], cleaned)

    def full_output(self, part: Mapping[str, Any]) -> tuple[str | None, str]:
        """An externalized tool output from ``<session>/tool-results/<id>/output.txt``."""
        name = str(part["tool_output_ref"]).rstrip("/").rsplit("/", 1)[-1]
        if name in ("", ".", ".."):
            return None, f"tool_output_ref {part['tool_output_ref']!r} names no folder"
        path = self.ref.directory / "tool-results" / name / "output.txt"
        data = self.read(path)
        if data is None:
            return None, f"{self.rel(path)} is missing; the preview is kept"
        expected = part.get("tool_output_sha256")
        if isinstance(expected, str) and hashlib.sha256(data).hexdigest() != expected:
            return None, f"{self.rel(path)} does not match its sha256; the preview is kept"
        try:
            return data.decode("utf-8"), ""
        except UnicodeDecodeError:
            return None, f"{self.rel(path)} is not UTF-8; the preview is kept"

    def messages(self, path: Path) -> list[OvMessage]:
        data = self.read(path)
        if data is None:
            return []
        found: list[OvMessage] = []
        # Lines end with "\n" only: other Unicode line breaks are text inside a message.
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw.decode("utf-8"), parse_constant=_keep_constant)
            except UnicodeDecodeError:
                self.report(path, number, ProblemKind.INVALID_JSON, "not UTF-8; line skipped")
                continue
            except json.JSONDecodeError as error:
                detail = f"not JSON: {error.msg} (column {error.colno}); line skipped"
                self.report(path, number, ProblemKind.INVALID_JSON, detail)
                continue
            try:
                converted = convert_line(
                    value,
                    ids=self.ids,
                    full_output=self.full_output,
                    fallback_time=self.last_time,
                    max_message_bytes=self.max_message_bytes,
                )
            except InvalidLine as error:
                self.report(path, number, error.kind, f"{error.detail}; line skipped")
                continue
            if converted.message_id in self.seen:
                detail = f"{converted.message_id} was read before; line skipped"
                self.report(path, number, ProblemKind.DUPLICATE_MESSAGE, detail)
                continue
            self.seen.add(converted.message_id)
            for kind, detail in converted.problems:
                self.report(path, number, kind, detail)
            self.last_time = converted.messages[0].created_at or self.last_time
            found.append(
                OvMessage(converted.message_id, number, converted.messages, converted.tool_parts)
            )
        return found

    def archive(self, directory: Path, index: int) -> OvArchive | None:
        messages = self.messages(directory / "messages.jsonl")
        meta = self.json_object(directory / ".meta.json")
        done_path, failed_path = directory / ".done", directory / ".failed.json"
        overview_text = self.text(directory / ".overview.md")
        if not messages:
            had = "" if overview_text is None else " (its overview is not imported either)"
            self.report(
                directory,
                None,
                ProblemKind.EMPTY_ARCHIVE,
                f"no messages could be read; archive skipped{had}",
            )
            return None
        if meta is None and not (directory / ".meta.json").exists():
            self.report(directory / ".meta.json", None, ProblemKind.MISSING_META, "missing")
        phase1 = meta.get("phase1") if meta is not None else None
        phase1 = phase1 if isinstance(phase1, dict) else {}
        created_at = parse_time(phase1.get("created_at")) or messages[-1].messages[-1].created_at
        retained = phase1.get("retained_message_ids")
        common: dict[str, Any] = {
            "name": directory.name,
            "index": index,
            "path": self.rel(directory),
            "messages": tuple(messages),
            "keep_recent_count": _number(phase1.get("keep_recent_count")),
            "retained": len(retained) if isinstance(retained, list) else 0,
            "created_at": created_at,
        }
        if done_path.exists():
            done = self.json_object(done_path) or {}
            overview = NO_OVERVIEW if overview_text is None else read_overview(overview_text)
            enabled = done.get("enable_working_memory", done.get("working_memory_enabled", True))
            if overview.kind is OverviewKind.NONE and enabled is not False:
                # OpenViking itself treats this archive as failed; so does the import, which
                # lets a retry (or the next commit) build the working memory it lacks.
                detail = "marked done with working memory on, but no readable .overview.md"
                self.report(directory, None, ProblemKind.OVERVIEW_MISSING, f"{detail}; failed")
                return OvArchive(
                    **common,
                    status=ArchiveStatus.FAILED,
                    overview=NO_OVERVIEW,
                    finished_at=created_at,
                    error_stage="overview_missing",
                    last_error=f"imported from OpenViking: {detail}",
                )
            return OvArchive(
                **common, status=ArchiveStatus.DONE, overview=overview, finished_at=created_at
            )
        if failed_path.exists():
            failed = self.json_object(failed_path) or {}
            stage = failed.get("stage") if isinstance(failed.get("stage"), str) else "unknown"
            error = failed.get("error")
            return OvArchive(
                **common,
                status=ArchiveStatus.FAILED,
                overview=NO_OVERVIEW,
                finished_at=parse_time(failed.get("failed_at")) or created_at,
                error_stage=str(stage)[:ERROR_STAGE_CHARS],
                last_error=(error if isinstance(error, str) else json.dumps(error))[:ERROR_CHARS],
            )
        return OvArchive(
            **common, status=ArchiveStatus.PENDING, overview=NO_OVERVIEW, finished_at=None
        )

    def session(self) -> OvSession:
        directory = self.ref.directory
        meta_path = directory / ".meta.json"
        meta = self.json_object(meta_path)
        if meta is None and not meta_path.exists():
            self.report(
                meta_path, None, ProblemKind.MISSING_META, "missing; counters are recomputed"
            )
        indexed = sorted(
            (int(match.group(1)), folder)
            for folder in _folders(directory / "history")
            if (match := ARCHIVE_NAME.match(folder.name))
        )
        archives = [
            archive
            for index, folder in indexed
            if (archive := self.archive(folder, index)) is not None
        ]
        live = self.messages(directory / "messages.jsonl")
        if meta is not None:
            self.check_meta(meta, archives, live, highest=indexed[-1][0] if indexed else 0)
        everything = [message for archive in archives for message in archive.messages] + live
        first_time = everything[0].messages[0].created_at if everything else None
        return OvSession(
            ref=self.ref,
            meta=meta,
            archives=tuple(archives),
            live=tuple(live),
            created_at=(parse_time(meta.get("created_at")) if meta else None) or first_time,
            keep_recent_count=_number(meta.get("keep_recent_count")) if meta else None,
            pending_tokens=_number(meta.get("pending_tokens")) if meta else None,
            fingerprint=self.digest.hexdigest(),
            same_files=frozenset({self.digest.hexdigest(), self.named_above.hexdigest()}),
            problems=tuple(self.problems),
        )

    def check_meta(
        self,
        meta: Mapping[str, Any],
        archives: list[OvArchive],
        live: list[OvMessage],
        *,
        highest: int,
    ) -> None:
        """Report where ``.meta.json`` and the files disagree (the files win)."""
        archived = sum(len(archive.messages) for archive in archives)
        expected: list[tuple[str, object, object]] = [
            ("session_id", meta.get("session_id"), self.ref.session_id),
            ("created_by_account_id", meta.get("created_by_account_id"), self.ref.account),
            ("created_by_user_id", meta.get("created_by_user_id"), self.ref.user),
            ("message_count", meta.get("message_count"), len(live)),
            ("total_message_count", meta.get("total_message_count"), archived + len(live)),
            ("commit_count", meta.get("commit_count"), highest),
        ]
        for key, said, found in expected:
            if said is not None and said != found:
                self.report(
                    self.ref.directory / ".meta.json",
                    None,
                    ProblemKind.META_MISMATCH,
                    f"{key} is {said!r}, the files hold {found!r}",
                )


def read_session(ref: SessionRef, *, base: Path, max_message_bytes: int) -> OvSession:
    """One session folder as ``records`` values; ``base`` is what problem paths are relative
    to (the workspace directory)."""
    return _SessionReader(ref, base, max_message_bytes).session()
