"""OpenTelemetry spans of the service, exported to the SDK's in-memory exporter: append, one
commit (commit → archive generation → model calls with their tokens), context assembly and
memory search, with their attributes; and nothing set up when nothing is configured."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app import telemetry
from app.archives.generation import WorkingMemoryGenerator
from app.config import Settings
from app.db import Database
from app.llm.fakes import ScriptedChatModel, tool_call
from app.usage.metered import MeteredChatModel
from tests.conftest import AppFactory, make_tenant
from tests.support.spans import Node, from_sdk, render, tree

SECRET = "My badge number is 48213 and I prefer green tea."


@pytest.fixture
def exported(settings: Settings) -> Iterator[tuple[InMemorySpanExporter, InMemoryMetricReader]]:
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    assert telemetry.start(settings, span_exporter=exporter, metric_reader=reader, environ={})
    try:
        yield exporter, reader
    finally:
        telemetry.stop()


def creation() -> Any:
    markdown = "# Working Memory\n\n## Session Title\nBadge\n\n## Current State\nTalking.\n"
    return tool_call(
        json.dumps({"markdown": markdown}),
        prompt_tokens=900,
        completion_tokens=60,
        model="gpt-trace",
    )


def extraction() -> Any:
    memory = {
        "category": "preference",
        "content": "The user prefers green tea.",
        "confidence": 0.9,
        "source_seqs": [1],
    }
    return tool_call(
        json.dumps({"memories": [memory]}),
        prompt_tokens=250,
        completion_tokens=30,
        model="gpt-trace",
    )


def attributes_of(roots: list[Node]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for node in roots:
        found.append(node.attributes)
        found += attributes_of(node.children)
    return found


async def test_the_span_tree_of_append_commit_context_and_search(
    app_client: AppFactory,
    database: Database,
    exported: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    exporter, reader = exported
    keys = await make_tenant(database, "traced")
    chat = ScriptedChatModel([creation(), extraction()], model="gpt-trace")
    generator = WorkingMemoryGenerator(MeteredChatModel(chat, None), fallback="none")
    async with app_client(database, generator=generator, memory_extractor="model") as http:
        created = await http.post("/v1/sessions", json={}, headers=keys.write)
        sid = created.json()["id"]
        said = await http.post(
            f"/v1/sessions/{sid}/messages",
            json={"role": "user", "content": SECRET},
            headers=keys.write,
        )
        assert said.status_code == 201, said.text
        committed = await http.post(
            f"/v1/sessions/{sid}/commit",
            json={"keep_recent_count": 0, "wait": True},
            headers=keys.write,
        )
        assert committed.json()["status"] == "done", committed.text
        context = await http.get(
            f"/v1/sessions/{sid}/context", params={"recall": "tea"}, headers=keys.read
        )
        assert context.status_code == 200, context.text
        found = await http.get("/v1/memories/search", params={"q": "tea"}, headers=keys.read)
        assert found.status_code == 200, found.text
    roots = tree(from_sdk(exporter.get_finished_spans()))
    print(render(roots))  # noqa: T201 - the span tree, for the docs
    assert [root.shape() for root in roots] == [
        ("workmem.append", []),
        (
            "workmem.commit",
            [("workmem.archive.generate", [("chat gpt-trace", []), ("chat gpt-trace", [])])],
        ),
        ("workmem.context", [("retrieval workmem.memories", [])]),
        ("retrieval workmem.memories", []),
    ]
    append, commit, context_span, search = roots
    tenant = str(keys.tenant_id)
    assert append.attributes == {
        "workmem.tenant_id": tenant,
        "workmem.agent_session_id": sid,
        "workmem.messages": 1,
    }
    assert commit.attributes == {
        "workmem.tenant_id": tenant,
        "workmem.agent_session_id": sid,
        "workmem.archive_seq": 1,
    }
    archive = commit.children[0]
    assert archive.attributes == {
        "workmem.tenant_id": tenant,
        "workmem.agent_session_id": sid,
        "workmem.archive_seq": 1,
        "workmem.attempt": 1,
        "workmem.generator": "llm_create",
    }
    create, extract = archive.children
    common = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-trace",
        "gen_ai.response.model": "gpt-trace",
        "workmem.tenant_id": tenant,
        "workmem.agent_session_id": sid,
        "workmem.archive_seq": 1,
    }
    assert create.attributes == {
        **common,
        "workmem.purpose": "wm_create",
        "gen_ai.usage.input_tokens": 900,
        "gen_ai.usage.output_tokens": 60,
    }
    assert extract.attributes == {
        **common,
        "workmem.purpose": "extraction",
        "gen_ai.usage.input_tokens": 250,
        "gen_ai.usage.output_tokens": 30,
    }
    assert context_span.attributes == {
        "workmem.tenant_id": tenant,
        "workmem.agent_session_id": sid,
        "workmem.recall": True,
    }
    assert search.attributes == {
        "workmem.tenant_id": tenant,
        "gen_ai.operation.name": "retrieval",
        "gen_ai.data_source.id": "workmem.memories",
        "workmem.limit": 5,
    }
    texts = [str(value) for found in attributes_of(roots) for value in found.values()]
    assert not any("48213" in text or "tea" in text for text in texts)
    metrics = reader.get_metrics_data()
    assert metrics is not None
    points: dict[tuple[object, object], object] = {}
    for resource in metrics.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != "gen_ai.client.token.usage":
                    continue
                for point in metric.data.data_points:
                    assert isinstance(point, HistogramDataPoint)
                    labels = dict(point.attributes or {})
                    points[(labels["workmem.purpose"], labels["gen_ai.token.type"])] = point.sum
    assert points == {
        ("wm_create", "input"): 900,
        ("wm_create", "output"): 60,
        ("extraction", "input"): 250,
        ("extraction", "output"): 30,
    }


async def test_a_failed_model_call_is_an_error_span_with_its_code_only(
    settings: Settings, exported: tuple[InMemorySpanExporter, InMemoryMetricReader]
) -> None:
    from app.llm.ports import TransientModelError
    from app.wm.schema import UPDATE_TOOL

    exporter, _ = exported
    chat = MeteredChatModel(
        ScriptedChatModel([TransientModelError("timed out after 60 s", code="timeout")]), None
    )
    with pytest.raises(TransientModelError):
        await chat.call_tool(system="s", user=SECRET, tool=UPDATE_TOOL["function"])
    [span] = exporter.get_finished_spans()
    assert span.status.status_code.name == "ERROR"
    assert span.status.description is None
    assert dict(span.attributes or {})["error.type"] == "timeout"
    assert span.events == ()


@pytest.mark.parametrize(
    ("endpoint", "environ", "on"),
    [
        (None, {}, False),
        (None, {"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_HEADERS": "a=b"}, False),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        (None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ("http://127.0.0.1:4318", {}, True),
        ("http://127.0.0.1:4318", {"OTEL_SDK_DISABLED": "true"}, False),
        (
            None,
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318", "OTEL_SDK_DISABLED": "TRUE"},
            False,
        ),
    ],
)
def test_telemetry_is_on_only_when_configured(
    endpoint: str | None, environ: dict[str, str], on: bool
) -> None:
    settings = Settings(otel_endpoint=endpoint)
    assert telemetry.configured(settings, environ) is on


def test_with_nothing_configured_no_exporter_is_set_up() -> None:
    assert telemetry.start(Settings(), environ={}) is False
    assert not telemetry.enabled()
    assert telemetry._active is None
    with telemetry.span("anything", {"workmem.tenant_id": "t"}) as current:
        assert current is None
    telemetry.annotate(**{"workmem.archive_seq": 1})
    telemetry.stop()


def test_a_second_start_leaves_the_first_in_place(settings: Settings) -> None:
    first = InMemorySpanExporter()
    assert telemetry.start(settings, span_exporter=first, environ={})
    try:
        assert telemetry.start(settings, span_exporter=InMemorySpanExporter(), environ={}) is False
        with telemetry.span("one", {}):
            pass
        assert [span.name for span in first.get_finished_spans()] == ["one"]
    finally:
        telemetry.stop()
    assert not telemetry.enabled()
