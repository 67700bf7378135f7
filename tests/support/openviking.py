"""OpenViking workspaces for tests and benchmarks: the real sample, writable copies of it, and
copies scaled up to many sessions (and several users) by renaming its session folders.

The sample is read from ``../shared/fixtures`` and never copied into the project.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT.parent / "shared" / "fixtures" / "openviking-workspace-sample"
SESSIONS = Path("viking/acme/user/alice/sessions")


def copy_tree(source: Path, target: Path) -> Path:
    """A writable copy (the sample's files are read-only; their modes are not copied)."""
    for folder, _, files in os.walk(source):
        relative = Path(folder).relative_to(source)
        (target / relative).mkdir(parents=True, exist_ok=True)
        for name in files:
            shutil.copyfile(Path(folder) / name, target / relative / name)
    return target


def copy_sample(target: Path) -> Path:
    return copy_tree(SAMPLE, target)


def rename_session(session_dir: Path, session_id: str, user: str | None = None) -> None:
    """Make a copied session folder a session of its own (its ``.meta.json`` says who it is)."""
    meta_path = session_dir / ".meta.json"
    meta = json.loads(meta_path.read_text())
    meta["session_id"] = session_id
    if user is not None:
        meta["created_by_user_id"] = user
    meta_path.write_text(json.dumps(meta))


def scaled_workspace(target: Path, sessions: int, *, users: int = 1) -> Path:
    """A workspace of ``sessions`` sessions: the sample's, copied round-robin under new ids and
    spread over ``users`` users of account ``acme``."""
    originals = sorted(p for p in (SAMPLE / SESSIONS).iterdir() if p.is_dir())
    for number in range(sessions):
        original = originals[number % len(originals)]
        user = "alice" if number % users == 0 else f"user{number % users}"
        session_id = f"{original.name}-{number:05d}"
        session_dir = target / "viking" / "acme" / "user" / user / "sessions" / session_id
        copy_tree(original, session_dir)
        rename_session(session_dir, session_id, user)
    return target
