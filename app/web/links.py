"""OpenAPI links: which answer's field feeds which later operation's parameter.

Owns stating, in the document, that the ``id`` a create answers is the path parameter of the
operations on that object (and the like), so a client — or a stateful fuzzer — can follow a
workflow from the document alone. Never changes an operation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI


@dataclass(frozen=True, slots=True)
class Link:
    """From ``method path`` answering ``statuses``, to every operation under ``target_prefix``
    whose parameters are all given by ``parameters`` (runtime expressions)."""

    method: str
    path: str
    statuses: Sequence[str]
    target_prefix: str
    parameters: Mapping[str, str]


def document_links(app: FastAPI, links: Sequence[Link]) -> None:
    generate: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None and app.openapi_schema.get("x-linked"):
            return app.openapi_schema
        document = generate()
        paths = document.get("paths", {})
        for link in links:
            source = paths.get(link.path, {}).get(link.method)
            if source is None:
                continue
            targets = _targets(paths, link)
            for status in link.statuses:
                response = source.get("responses", {}).get(status)
                if response is not None:
                    response.setdefault("links", {}).update(targets)
        document["x-linked"] = True
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]


def _targets(paths: Mapping[str, Any], link: Link) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for path, item in paths.items():
        if not path.startswith(link.target_prefix):
            continue
        for operation in item.values():
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            needed = {p["name"] for p in operation.get("parameters", []) if p.get("in") == "path"}
            if not needed or not needed <= set(link.parameters):
                continue
            found[operation["operationId"]] = {
                "operationId": operation["operationId"],
                "parameters": {name: link.parameters[name] for name in sorted(needed)},
            }
    return found
