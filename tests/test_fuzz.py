"""Schema-driven fuzzing of the real server (schemathesis, stateful where links allow) on `/v1`
(a tenant's key, and the operator's token on `/v1/admin`) and `/api/v1`: zero 5xx, and every
answer matching its documented status codes, content type, headers and schema.

Bounded: 25 examples per operation and phase, one fixed seed; two passes over `/v1` — printable
UTF-8 strings (deep into the logic: valid bodies create what links follow) and the default
hostile strings (NUL, lone surrogates). The figures (requests served, 5xx) are read from the
server's own `/metrics` and printed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.servers import Server

pytestmark = pytest.mark.e2e

OPERATOR_TOKEN = "fuzz-operator-token"
CHECKS = ",".join(
    (
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
    )
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(
        tmp_path_factory.mktemp("fuzz") / "home", env={"WORKMEM_ADMIN_TOKEN": OPERATOR_TOKEN}
    )
    running.wait_ready()
    yield running
    log = running.stop()
    assert '"level": "error"' not in log, "no unhandled error was logged"


def schemathesis(server: Server, document: str, header: str, *extra: str) -> str:
    command = Path(sys.executable).parent / "schemathesis"
    result = subprocess.run(
        [
            str(command),
            "run",
            f"{server.base_url}{document}",
            "--header",
            header,
            "--checks",
            CHECKS,
            "--max-examples",
            "25",
            "--seed",
            "20261201",
            "--no-color",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-6000:]
    generated = re.search(r"(\d+) generated, (\d+) passed", result.stdout)
    assert generated is not None, result.stdout[-2000:]
    assert generated.group(1) == generated.group(2)
    return result.stdout


def served(server: Server) -> dict[str, float]:
    """Requests the server answered so far, by status (its own ``/metrics``)."""
    text = httpx.get(f"{server.base_url}/metrics", timeout=10).text
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name != "workmem_http_requests":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                status = sample.labels["status"]
                totals[status] = totals.get(status, 0) + sample.value
    return totals


def test_no_generated_request_gets_a_server_error_or_an_undocumented_answer(
    server: Server,
) -> None:
    key = (server.home / "local-api-key").read_text().strip()
    before = served(server)
    runs = {
        "/v1 (printable strings)": schemathesis(
            server,
            "/openapi.json",
            f"Authorization: Bearer {key}",
            "--exclude-path-regex",
            "^/v1/admin",
            "--generation-allow-x00",
            "false",
            "--generation-codec",
            "utf-8",
        ),
        "/v1 (hostile strings)": schemathesis(
            server,
            "/openapi.json",
            f"Authorization: Bearer {key}",
            "--exclude-path-regex",
            "^/v1/admin",
            "--phases",
            "coverage,fuzzing",
        ),
        "/v1/admin": schemathesis(
            server,
            "/openapi.json",
            f"Authorization: Bearer {OPERATOR_TOKEN}",
            "--include-path-regex",
            "^/v1/admin",
        ),
        "/api/v1": schemathesis(server, "/api/v1/openapi.json", f"X-API-Key: {key}"),
    }
    after = served(server)
    requests = sum(after.values()) - sum(before.values())
    errors = sum(
        count - before.get(status, 0) for status, count in after.items() if status.startswith("5")
    )
    cases = {
        name: re.search(r"(\d+) generated", output).group(1)  # type: ignore[union-attr]
        for name, output in runs.items()
    }
    print(f"fuzzing: test cases {cases}; requests served {requests:.0f}; 5xx {errors:.0f}")  # noqa: T201 - the suite's figures
    assert requests > 3000
    assert errors == 0
