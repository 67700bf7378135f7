"""The append routes' handler: the common request goes straight to the endpoint.

FastAPI resolves a route's parameters on every request (its dependency graph, each parameter's
field, the body's content type read through ``email.message``), which cost an append more than
its own work in the app. For the request nearly every append is (a JSON body, no
``Idempotency-Key``, an agent-session id in its canonical form, no dependency overridden, no
FastAPI telemetry listening) this handler does what that resolution would, in its order: reads
and strictly parses the body, authenticates the writer, validates the body with the route's
model and calls the endpoint. Anything else, and any of those steps that would fail before the
endpoint runs, goes through FastAPI's own handler with the body already read, so every answer
but success (which problem, in which order of checks) is FastAPI's. The route, its parameters
and its OpenAPI description are unchanged.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import HTTPException
from fastapi.routing import APIRoute
from fastapi.telemetry import get_telemetry_data
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from app.tenancy.auth import writer_principal
from app.web.requests import StrictJsonRequest, StrictJsonRoute

_CANONICAL_UUID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_FAST = "_workmem_fast_append"

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def direct_append(body_model: type[BaseModel]) -> Callable[[Any], Any]:
    """Mark an append endpoint (parameters ``agent_session_id``, ``body``, ``principal``,
    ``request``, ``idempotency_key``) for the direct handler, its body validated by
    ``body_model``. Put it under the route's decorator."""

    def mark(endpoint: Any) -> Any:
        setattr(endpoint, _FAST, body_model)
        return endpoint

    return mark


class SessionsRoute(StrictJsonRoute):
    """Strict JSON bodies (``StrictJsonRoute``), and the direct handler for the endpoints
    marked with ``direct_append``."""

    def get_route_handler(self) -> Handler:
        body_model: type[BaseModel] | None = getattr(self.endpoint, _FAST, None)
        if body_model is None:
            return super().get_route_handler()
        whole = APIRoute.get_route_handler(self)
        endpoint = self.endpoint
        overrides = self.dependency_overrides_provider

        async def handler(request: Request) -> Response:
            strict = StrictJsonRequest(request.scope, request.receive)
            if getattr(overrides, "dependency_overrides", None) or get_telemetry_data():
                return await whole(strict)
            arguments = await _direct_arguments(strict, body_model)
            if arguments is None:
                return await whole(strict)
            response: Response = await endpoint(**arguments)
            return response

        return handler


async def _direct_arguments(
    request: StrictJsonRequest, body_model: type[BaseModel]
) -> dict[str, Any] | None:
    """The endpoint's arguments, or ``None`` when FastAPI's handler must answer."""
    headers = request.headers
    if "idempotency-key" in headers:
        return None
    content_type = headers.get("content-type", "")
    if content_type.partition(";")[0].strip().lower() != "application/json":
        return None
    try:
        raw = await request.body()
    except HTTPException:  # the body's own deadline or size (``BodyGuard``), as FastAPI lets pass
        raise
    except Exception as error:  # a client gone mid-body: FastAPI's answer to a body it cannot read
        raise HTTPException(400, "There was an error parsing the body") from error
    if not raw:
        return None
    try:
        parsed = await request.json()
    except json.JSONDecodeError:
        return None
    # FastAPI solves the dependencies before it validates any parameter: an authentication
    # failure is the answer even when the id or the body is wrong too.
    principal = await writer_principal(request)
    raw_id = request.path_params.get("agent_session_id")
    if not isinstance(raw_id, str) or _CANONICAL_UUID.fullmatch(raw_id) is None:
        return None
    try:
        body = body_model.model_validate(parsed)
    except ValidationError:
        return None
    return {
        "agent_session_id": uuid.UUID(raw_id),
        "body": body,
        "principal": principal,
        "request": request,
        "idempotency_key": None,
    }
