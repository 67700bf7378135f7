"""The application's state, typed.

``app.state`` is an untyped bag: each thing the lifespan in ``main`` builds is kept there under
a ``Slot`` declared beside the feature that reads it, so what ``main`` puts and what a
dependency reads have one type, which mypy checks on both sides.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request

T = TypeVar("T")


class Slot(Generic[T]):
    """One typed place in the application's state."""

    def __init__(self, name: str) -> None:
        self.name = name

    def put(self, app: Starlette, value: T) -> None:
        setattr(app.state, self.name, value)

    def get(self, app: Starlette) -> T:
        found: T = getattr(app.state, self.name)
        return found

    async def read(self, request: Request) -> T:
        """The value, for a request (a dependency: async, so no hop to the thread pool)."""
        found: T = getattr(request.app.state, self.name)
        return found
