"""Request dependencies of long-term memory: the process's embedder."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from app.memories.embedding import Embedder
from app.web.state import Slot

EMBEDDER = Slot[Embedder]("embedder")
"""The process's embedder: queries are embedded with it."""

EmbedderDep = Annotated[Embedder, Depends(EMBEDDER.read)]
