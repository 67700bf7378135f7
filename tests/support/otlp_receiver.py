"""A local OTLP/HTTP collector for tests: receives ``POST /v1/traces`` and ``/v1/metrics``
(protobuf) on a free loopback port from a background thread, and keeps the spans (as
``tests.support.spans.Node``) and the names of the metrics it was sent."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.support.spans import Node


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return None if kind is None else getattr(any_value, kind)


class OtlpReceiver:
    def __init__(self) -> None:
        self.spans: list[Node] = []
        self.metrics: set[str] = set()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _received_traces(self, body: bytes) -> bytes:
        request = ExportTraceServiceRequest.FromString(body)
        nodes = [
            Node(
                span.name,
                {attribute.key: _value(attribute.value) for attribute in span.attributes},
                int.from_bytes(span.span_id, "big"),
                int.from_bytes(span.parent_span_id, "big") if span.parent_span_id else None,
                span.start_time_unix_nano,
            )
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
        with self._lock:
            self.spans += nodes
        answer: bytes = ExportTraceServiceResponse().SerializeToString()
        return answer

    def _received_metrics(self, body: bytes) -> bytes:
        request = ExportMetricsServiceRequest.FromString(body)
        names = {
            metric.name
            for resource in request.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }
        with self._lock:
            self.metrics |= names
        answer: bytes = ExportMetricsServiceResponse().SerializeToString()
        return answer

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path == "/v1/traces":
                    answer = receiver._received_traces(body)
                elif self.path == "/v1/metrics":
                    answer = receiver._received_metrics(body)
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler
