"""The embedder port: texts in, one vector per text out, and the embedder's identity.

Owns the contract that extraction, search and re-embedding code against, and the one error type
an embedder raises. Never imports an SDK or does I/O: providers implement this (``hashing``,
``openai_embedder``) and are wired only in the composition root.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class EmbeddingError(Exception):
    """Embedding failed. ``str(error)`` is short and safe to store: no keys, no input text.

    ``transient`` says whether trying again later may help (timeouts, 429, 5xx).
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.transient = transient


class Embedder(Protocol):
    """Turns texts into vectors of ``dim`` floats.

    ``identity`` names the embedder, its model and its dimension (``hashing:v1:384``); it is
    stored with every vector, and only vectors of the same identity are ever compared.
    """

    @property
    def identity(self) -> str: ...

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; raises ``EmbeddingError`` and nothing else."""
        ...


def dimension_problem(embedder_identity: str, embedder_dim: int, column_dim: int) -> str | None:
    """Why this embedder cannot write into a ``vector(column_dim)`` column, or ``None``."""
    if embedder_dim == column_dim:
        return None
    return (
        f"the embedder {embedder_identity} produces {embedder_dim}-dimensional vectors, but the "
        f"memories.embedding column is vector({column_dim}) (fixed by WORKMEM_EMBEDDING_DIM when "
        f"the migration ran); configure an embedder of {column_dim} dimensions"
    )
