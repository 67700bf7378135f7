"""One request of the client, described as data: method, path, query, body and how to read the
answer. Built by ``calls``, sent by the sync or async client (``sending``).

Owns the shape of a request and the parsing of a success into its typed result. Never sends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: Mapping[str, str | int | float | bool] = field(default_factory=dict)
    body: Any = None
    """The JSON body; ``None`` sends none."""
    headers: Mapping[str, str] = field(default_factory=dict)


IDEMPOTENCY_KEY = "Idempotency-Key"


def keyed(idempotency_key: str | None) -> dict[str, str]:
    """The header that makes a write safe to send again: a repeat with the same key is answered
    with the first answer, and nothing is stored twice."""
    return {} if idempotency_key is None else {IDEMPOTENCY_KEY: idempotency_key}


def reads(model: type[M]) -> Callable[[httpx.Response], M]:
    """Parse a JSON answer into ``model``."""

    def parse(response: httpx.Response) -> M:
        return model.model_validate_json(response.content)

    return parse


def nothing(_: httpx.Response) -> None:
    """An answer without a body (204)."""


def query(**values: str | int | float | bool | None) -> dict[str, str | int | float | bool]:
    """Query parameters without the ones left unset."""
    return {name: value for name, value in values.items() if value is not None}


def body(**values: Any) -> dict[str, Any]:
    """A JSON body without the fields left unset (the server's defaults apply)."""
    return {name: value for name, value in values.items() if value is not None}
