"""OpenTelemetry traces and metrics, off unless configured.

Owns the tracer and meter of the process and the few spans the service makes: append, commit,
archive generation, each model and embedding call (with the OpenTelemetry GenAI attributes and
the tokens the provider reported), context assembly and memory search. Attributes name the
tenant, agent session and archive seq (``workmem.*``), never a message, prompt or key.

On when ``WORKMEM_OTEL_ENDPOINT`` or the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set (and ``OTEL_SDK_DISABLED`` is not ``true``);
it needs the ``otel`` extra. Off, no OpenTelemetry module is even imported: a traced function
costs one check of a module global.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from app.config import Settings

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer

logger = logging.getLogger(__name__)

Attributes = Mapping[str, str | int | float | bool | None]
P = ParamSpec("P")
R = TypeVar("R")

SCOPE = "workmem"
TENANT = "workmem.tenant_id"
AGENT_SESSION = "workmem.agent_session_id"
ARCHIVE_SEQ = "workmem.archive_seq"
PURPOSE = "workmem.purpose"
# The GenAI semantic conventions' names (opentelemetry-semantic-conventions, gen_ai.*).
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOKEN_TYPE = "gen_ai.token.type"  # noqa: S105 - an attribute name
DATA_SOURCE = "gen_ai.data_source.id"
ERROR_TYPE = "error.type"


@dataclass(frozen=True, slots=True)
class _Active:
    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    tracer: Tracer
    token_usage: Histogram
    duration: Histogram


_active: _Active | None = None


def configured(settings: Settings, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether configuration asks for telemetry."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return bool(
        settings.otel_endpoint
        or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def enabled() -> bool:
    return _active is not None


def start(
    settings: Settings,
    *,
    span_exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
    environ: Mapping[str, str] = os.environ,
) -> bool:
    """Set up the tracer and meter when configured (or when given an exporter, as tests do).

    Returns whether this call set them up (and so should ``stop`` them); ``False`` when
    telemetry is off or already on.
    """
    global _active
    if _active is not None:
        return False
    if span_exporter is None and not configured(settings, environ):
        return False
    try:
        _active = _build(settings, span_exporter, metric_reader)
    except ImportError:
        logger.warning("telemetry is configured but the otel extra is not installed: it is off")
        return False
    logger.info("OpenTelemetry traces and metrics on")
    return True


def stop() -> None:
    """Export what is buffered and switch telemetry off."""
    global _active
    active, _active = _active, None
    if active is None:
        return
    active.tracer_provider.shutdown()
    active.meter_provider.shutdown()


def _build(
    settings: Settings, span_exporter: SpanExporter | None, metric_reader: MetricReader | None
) -> _Active:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    resource = Resource.create({"service.name": settings.otel_service_name})
    tracer_provider = TracerProvider(resource=resource)
    if span_exporter is not None:
        tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        endpoint = _signal_endpoint(settings, "traces")
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    readers: list[MetricReader] = []
    if metric_reader is not None:
        readers.append(metric_reader)
    elif span_exporter is None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        endpoint = _signal_endpoint(settings, "metrics")
        readers.append(
            PeriodicExportingMetricReader(
                OTLPMetricExporter(endpoint=endpoint),
                export_interval_millis=settings.otel_metrics_interval_s * 1000,
            )
        )
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    meter = meter_provider.get_meter(SCOPE)
    return _Active(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        tracer=tracer_provider.get_tracer(SCOPE),
        token_usage=meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Tokens of model and embedding calls, by gen_ai.token.type",
        ),
        duration=meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="Duration of model and embedding calls",
        ),
    )


def _signal_endpoint(settings: Settings, signal: str) -> str | None:
    """``WORKMEM_OTEL_ENDPOINT``'s URL for one signal; ``None`` leaves the exporter to the
    standard ``OTEL_EXPORTER_OTLP_*`` variables."""
    if not settings.otel_endpoint:
        return None
    return f"{settings.otel_endpoint.rstrip('/')}/v1/{signal}"


def _clean(attributes: Attributes) -> dict[str, str | int | float | bool]:
    return {key: value for key, value in attributes.items() if value is not None}


@contextmanager
def span(name: str, attributes: Attributes, *, client: bool = False) -> Iterator[Span | None]:
    """A span around the block (``None`` when telemetry is off). An exception leaves the span
    with an error status and its type only (``error.type``), never its message."""
    active = _active
    if active is None:
        yield None
        return
    from opentelemetry.trace import SpanKind, Status, StatusCode

    with active.tracer.start_as_current_span(
        name,
        kind=SpanKind.CLIENT if client else SpanKind.INTERNAL,
        attributes=_clean(attributes),
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except BaseException as error:
            current.set_attribute(ERROR_TYPE, getattr(error, "code", None) or type(error).__name__)
            current.set_status(Status(StatusCode.ERROR))
            raise


def traced(
    name: str, attributes: Callable[..., Attributes]
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Trace each call of an async function as ``name``, with ``attributes(*args, **kwargs)``
    (called with the function's own arguments, only when telemetry is on)."""

    def decorate(function: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(function)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if _active is None:
                return await function(*args, **kwargs)
            with span(name, attributes(*args, **kwargs)):
                return await function(*args, **kwargs)

        return wrapper

    return decorate


def annotate(**attributes: str | int | float | bool | None) -> None:
    """Add attributes to the current span, when telemetry is on."""
    if _active is None:
        return
    from opentelemetry import trace

    trace.get_current_span().set_attributes(_clean(attributes))


def record_model_call(
    current: Span | None,
    *,
    attributes: Attributes,
    input_tokens: int,
    output_tokens: int | None,
    seconds: float,
    error_type: str | None,
) -> None:
    """The tokens of a model call on its span, and in the GenAI metrics."""
    active = _active
    if active is None:
        return
    usage: dict[str, Any] = {INPUT_TOKENS: input_tokens}
    if output_tokens is not None:
        usage[OUTPUT_TOKENS] = output_tokens
    if current is not None:
        current.set_attributes(usage)
    labels = _clean(
        {key: attributes.get(key) for key in (OPERATION, PROVIDER, REQUEST_MODEL, PURPOSE)}
    )
    if error_type is not None:
        labels[ERROR_TYPE] = error_type
    active.duration.record(seconds, labels)
    if error_type is None:
        active.token_usage.record(input_tokens, {**labels, TOKEN_TYPE: "input"})
        if output_tokens is not None:
            active.token_usage.record(output_tokens, {**labels, TOKEN_TYPE: "output"})


def ids(
    tenant_id: object, agent_session_id: object = None, archive_seq: int | None = None
) -> dict[str, str | int | None]:
    """The ``workmem.*`` attributes naming whom a span worked for."""
    return {
        TENANT: None if tenant_id is None else str(tenant_id),
        AGENT_SESSION: None if agent_session_id is None else str(agent_session_id),
        ARCHIVE_SEQ: archive_seq,
    }
