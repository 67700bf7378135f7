"""The ``openai`` embedder: the official SDK's embeddings endpoint, on any compatible server.

Owns the request (``model``, a batch of strings, ``dimensions`` when configured, float vectors),
the check that every vector has the dimension this installation stores, and the translation of
SDK exceptions into ``EmbeddingError``; no other module sees an SDK exception. Never puts keys or
input text into an error message. Wired only by the composition root.
"""

from __future__ import annotations

from collections.abc import Sequence

import openai
from openai import AsyncOpenAI
from openai.types import CreateEmbeddingResponse

from app.memories.embedding import EmbeddingError

BATCH_SIZE = 128
"""Inputs per request: far below the API's 2048, so one request stays small and quick."""


class OpenAIEmbedder:
    """An ``Embedder`` over ``AsyncOpenAI`` embeddings.

    ``dimensions`` is sent to the server (models that can shorten their vectors); without it the
    model's own size must equal ``dim``. The SDK retries timeouts, connection errors, 429 and 5xx
    ``max_retries`` times with its own backoff.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        dim: int,
        dimensions: int | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        if not api_key:
            raise ValueError("api_key must not be empty")
        if not model:
            raise ValueError("model must not be empty")
        if dimensions is not None and dimensions != dim:
            raise ValueError("dimensions, when given, is the dimension of the vectors")
        self._model = model
        self._dim = dim
        self._dimensions = dimensions
        self._client = AsyncOpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=max_retries
        )

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self._model!r}, dim={self._dim})"

    @property
    def identity(self) -> str:
        return f"openai:{self._model}:{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    async def close(self) -> None:
        await self._client.close()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors, _ = await self.embed_counted(texts)
        return vectors

    async def embed_counted(self, texts: Sequence[str]) -> tuple[list[list[float]], int]:
        """The vectors, and the input tokens the server reported for them (0 when it did not)."""
        vectors: list[list[float]] = []
        tokens = 0
        for start in range(0, len(texts), BATCH_SIZE):
            batch, used = await self._batch(list(texts[start : start + BATCH_SIZE]))
            vectors += batch
            tokens += used
        return vectors, tokens

    async def _batch(self, texts: list[str]) -> tuple[list[list[float]], int]:
        try:
            response: object = await self._client.embeddings.create(
                model=self._model,
                input=texts,
                encoding_format="float",
                dimensions=openai.omit if self._dimensions is None else self._dimensions,
            )
        except openai.OpenAIError as error:
            raise _translate(error) from error
        except (ValueError, UnicodeDecodeError) as error:
            raise EmbeddingError(
                "the embeddings endpoint returned a body that is not JSON"
            ) from error
        return self._vectors(response, len(texts)), _input_tokens(response)

    def _vectors(self, response: object, expected: int) -> list[list[float]]:
        # Compatible servers vary: every field is checked as untrusted data.
        data: object = response.data if isinstance(response, CreateEmbeddingResponse) else None
        if not isinstance(data, list) or len(data) != expected:
            raise EmbeddingError(f"the embeddings endpoint did not return {expected} vectors")
        by_index: dict[int, list[float]] = {}
        for position, item in enumerate(data):
            index: object = getattr(item, "index", position)
            vector: object = getattr(item, "embedding", None)
            if not isinstance(vector, list) or not all(
                isinstance(value, int | float) and not isinstance(value, bool) for value in vector
            ):
                raise EmbeddingError("the embeddings endpoint returned a vector that is not floats")
            if len(vector) != self._dim:
                raise EmbeddingError(
                    f"the model {self._model} returned {len(vector)}-dimensional vectors; this "
                    f"installation stores {self._dim} (set WORKMEM_EMBEDDING_DIMENSIONS, or use a "
                    f"model of {self._dim} dimensions)"
                )
            by_index[index if isinstance(index, int) else position] = [float(v) for v in vector]
        if sorted(by_index) != list(range(expected)):
            raise EmbeddingError("the embeddings endpoint returned vectors with wrong indexes")
        return [by_index[index] for index in range(expected)]


def _input_tokens(response: object) -> int:
    usage: object = getattr(response, "usage", None)
    tokens: object = getattr(usage, "prompt_tokens", 0)
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0 else 0


def _translate(error: openai.OpenAIError) -> EmbeddingError:
    """The one place an SDK exception becomes an ``EmbeddingError``."""
    if isinstance(error, openai.APITimeoutError):
        return EmbeddingError("embedding request timed out", transient=True)
    if isinstance(error, openai.APIConnectionError):
        return EmbeddingError("could not reach the embeddings endpoint", transient=True)
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        transient = status == 429 or status >= 500
        verb = "failed" if transient else "rejected the call"
        return EmbeddingError(f"embeddings endpoint {verb} (HTTP {status})", transient=transient)
    return EmbeddingError(f"embedding call failed ({type(error).__name__})")
