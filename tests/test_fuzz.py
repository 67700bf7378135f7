"""Schema-driven fuzzing of the HTTP API against the real server: no input yields a 5xx."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_e2e import Server

pytestmark = pytest.mark.e2e


def test_no_generated_request_gets_a_server_error(tmp_path: Path) -> None:
    schemathesis = Path(sys.executable).parent / "schemathesis"
    if not schemathesis.exists():
        pytest.skip("schemathesis is not installed (it comes with the test extras)")
    server = Server(tmp_path / "home")
    try:
        server.wait_ready()
        key = (tmp_path / "home" / "local-api-key").read_text().strip()
        result = subprocess.run(
            [
                str(schemathesis),
                "run",
                f"{server.base_url}/openapi.json",
                "--header",
                f"Authorization: Bearer {key}",
                "--checks",
                "not_a_server_error",
                "--max-examples",
                "25",
                "--seed",
                "20261129",
                "--no-color",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    finally:
        log = server.stop()
    assert result.returncode == 0, result.stdout[-4000:]
    assert " passed" in result.stdout
    assert '"level": "error"' not in log
