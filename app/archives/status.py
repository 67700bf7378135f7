"""The states of an archive, which is also its job. A leaf: the ORM table and the API's
response models both use it, and it imports nothing."""

from __future__ import annotations

from enum import StrEnum


class ArchiveStatus(StrEnum):
    """An archive is also its job: pending → running → done | failed (DESIGN 6.2); an operator
    may set a failed one aside as ``cleared``: never run again, its messages left to the next
    archive."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CLEARED = "cleared"

    @property
    def is_finished(self) -> bool:
        return self in (ArchiveStatus.DONE, ArchiveStatus.FAILED, ArchiveStatus.CLEARED)
