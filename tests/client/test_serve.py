"""The sync client against the real ``workmem serve`` process: its background worker finishes a
commit that was not waited for, and every answer is typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.servers import Server
from workmem_client import ArchiveStatus, NotFoundError, WorkmemClient

pytestmark = pytest.mark.e2e


def test_sync_client_against_serve(tmp_path: Path) -> None:
    server = Server(tmp_path / "home")
    try:
        server.wait_ready()
        key = (tmp_path / "home" / "local-api-key").read_text().strip()
        with WorkmemClient(server.base_url, key, timeout_s=30) as workmem:
            created = workmem.create_session(external_id="sync", user_id="dora")
            workmem.append_batch(
                created.id,
                [
                    {"role": "user", "content": "Deploy app/api/routes.py to staging only."},
                    {"role": "assistant", "content": "Deploying to staging; prod is untouched."},
                    {"role": "user", "content": "Thanks. What is left?"},
                ],
            )
            accepted = workmem.commit(created.id, keep_recent_count=1)
            assert accepted.status == "accepted"
            assert accepted.archive is not None
            finished = workmem.wait_for_archive(created.id, accepted.archive.archive_seq)
            assert finished.status == ArchiveStatus.DONE
            current = workmem.working_memory(created.id)
            assert "app/api/routes.py" in current.sections["Files & Context"]
            messages = workmem.chat_messages(created.id, system_prompt="Be brief.")
            assert messages[0]["role"] == "system"
            assert messages[1]["content"].startswith("[Session History Summary]")
            assert messages[-1] == {"role": "user", "content": "Thanks. What is left?"}
            workmem.delete_session(created.id)
            with pytest.raises(NotFoundError):
                workmem.working_memory(created.id)
    finally:
        server.stop()
