"""What configuration builds: the working-memory generator (the model provider or the offline
extractor), the archive worker, the embedder and memory extractor, the webhook deliverer.

Used by the app's lifespan and by ``workmem worker``; holds no feature logic.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from app.archives.generation import WorkingMemoryGenerator
from app.archives.preparing import Preparer
from app.archives.worker import ArchiveWorker, WorkerConfig
from app.config import Settings
from app.db import Database
from app.llm.breaker import BreakerChatModel, BreakerConfig, CircuitBreaker
from app.llm.instrumented import InstrumentedChatModel
from app.llm.ports import ChatModel
from app.memories.embedding import Embedder
from app.memories.extraction import MemoryExtractor
from app.memories.hashing import HashingEmbedder
from app.memories.service import embedder_problem
from app.usage.metered import MeteredChatModel, MeteredEmbedder, Sink
from app.webhooks.delivery import DeliveryConfig, WebhookDeliverer
from app.webhooks.schedule import RetrySchedule
from app.wm.thresholds import GuardConfig


def build_generator(settings: Settings, sink: Sink | None = None) -> WorkingMemoryGenerator:
    """The model provider chosen by configuration; the offline extractor when there is none.

    ``sink`` receives a usage row per model call (``app.usage``)."""
    chat: ChatModel | None = None
    if settings.use_openai:
        from app.llm.openai_provider import OpenAIChatModel

        base_url = settings.llm_base_url or "https://api.openai.com/v1"
        # The breaker is outside the counting wrapper: a call it refuses was never made. The
        # usage rows are outside the breaker: a refused call is a row of its own.
        breaker = BreakerChatModel(
            InstrumentedChatModel(
                OpenAIChatModel(
                    base_url=base_url,
                    api_key=settings.llm_api_key.get_secret_value() if settings.llm_api_key else "",
                    model=settings.llm_model,
                    timeout_s=settings.llm_timeout_s,
                    max_retries=settings.llm_max_retries,
                )
            ),
            CircuitBreaker(
                BreakerConfig(
                    failures=settings.llm_breaker_failures,
                    cooldown_s=settings.llm_breaker_cooldown_s,
                ),
                time.monotonic,
            ),
            provider=urlsplit(base_url).hostname or "openai",
        )
        chat = MeteredChatModel(breaker, sink)
    return WorkingMemoryGenerator(
        chat,
        fallback=settings.llm_fallback,
        max_input_tokens=settings.llm_max_input_tokens,
        config=guard_config(settings),
    )


def guard_config(settings: Settings) -> GuardConfig:
    """The guard thresholds of DESIGN 3.5 from ``WORKMEM_GUARD_*`` settings."""
    prefix = "guard_"
    values = {
        name[len(prefix) :]: value
        for name, value in settings.model_dump().items()
        if name.startswith(prefix)
    }
    return GuardConfig(**values)


def build_worker(
    settings: Settings,
    database: Database,
    generator: WorkingMemoryGenerator,
    memories: MemoryExtractor | None,
) -> ArchiveWorker:
    """A worker; ``memories`` is the long-term memory extractor (``None``: extraction off)."""
    return ArchiveWorker(
        database,
        generator,
        WorkerConfig(
            lease_s=settings.worker_lease_s,
            max_attempts=settings.worker_max_attempts,
            poll_s=settings.worker_poll_s,
            backoff_base_s=settings.worker_backoff_base_s,
            backoff_max_s=settings.worker_backoff_max_s,
            idempotency_ttl_s=settings.idempotency_ttl_s,
            retention_every_s=settings.retention_every_s,
            retention_batch=settings.retention_batch,
        ),
        memories=memories,
    )


def build_preparer(
    settings: Settings,
    database: Database,
    generator: WorkingMemoryGenerator,
    memories: MemoryExtractor | None,
) -> Preparer | None:
    """What prepares the next archive of the agent sessions this process receives appends for
    (any worker resumes from it); None with a model making the working memory, or when off."""
    if generator.chat is not None or settings.prepare_idle_s <= 0:
        return None
    return Preparer(database, generator, memories, idle_s=settings.prepare_idle_s)


# --- long-term memory: the embedder and the memory extractor ----------------------------------


class EmbedderMismatch(RuntimeError):
    """The configured embedder cannot write into this database's ``memories.embedding``."""


def build_embedder(settings: Settings, sink: Sink | None = None) -> Embedder:
    """The embedder chosen by configuration; the offline ``hashing`` one by default. ``sink``
    receives a usage row per call of an embedding model (the offline one calls none)."""
    if settings.embedding_provider == "openai":
        from app.memories.openai_embedder import OpenAIEmbedder

        key = settings.embedding_api_key or settings.llm_api_key
        embedder = OpenAIEmbedder(
            base_url=settings.embedding_base_url
            or settings.llm_base_url
            or "https://api.openai.com/v1",
            api_key=key.get_secret_value() if key else "",
            model=settings.embedding_model,
            dim=settings.embedder_dim,
            dimensions=settings.embedding_dimensions,
            timeout_s=settings.embedding_timeout_s,
            max_retries=settings.embedding_max_retries,
        )
        return MeteredEmbedder(embedder, model=settings.embedding_model, sink=sink)
    return HashingEmbedder(settings.embedding_dim)


def build_memory_extractor(
    settings: Settings, generator: WorkingMemoryGenerator, embedder: Embedder
) -> MemoryExtractor | None:
    """Phase 2's memory extractor (``None`` when extraction is off): the model behind the
    working-memory generator when it has one and configuration asks for it, else the rules."""
    from app.memories.candidates import ValueConfig

    mode = settings.memory_mode
    if mode == "off":
        return None
    chat = generator.chat if mode == "model" else None
    return MemoryExtractor(
        embedder,
        chat=chat,
        mode="model" if chat is not None else "rules",
        fallback="rules" if settings.llm_fallback == "offline" else "none",
        value=ValueConfig(min_confidence=settings.memory_min_confidence),
        max_input_tokens=settings.llm_max_input_tokens,
        duplicate_similarity=settings.memory_duplicate_similarity,
    )


async def check_embedder(database: Database, embedder: Embedder) -> None:
    """Refuse an embedder whose dimension is not the column's, with both named."""
    async with database.unscoped() as db:
        problem = await embedder_problem(db, embedder)
    if problem is not None:
        raise EmbedderMismatch(problem)


async def close_embedder(embedder: Embedder) -> None:
    from app.memories.openai_embedder import OpenAIEmbedder

    if isinstance(embedder, MeteredEmbedder):
        embedder = embedder.inner
    if isinstance(embedder, OpenAIEmbedder):
        await embedder.close()


# --- webhooks: the delivery loop -------------------------------------------------------------


def build_deliverer(settings: Settings, database: Database) -> WebhookDeliverer:
    """The webhook delivery loop with the ``WORKMEM_WEBHOOKS_*`` settings."""
    return WebhookDeliverer(
        database,
        DeliveryConfig(
            poll_s=settings.webhooks_poll_s,
            lease_s=settings.webhooks_lease_s,
            batch=settings.webhooks_batch,
            timeout_s=settings.webhooks_timeout_s,
            allow_private=settings.webhooks_allow_private,
            schedule=RetrySchedule(
                max_attempts=settings.webhooks_max_attempts,
                base_s=settings.webhooks_backoff_base_s,
                max_s=settings.webhooks_backoff_max_s,
            ),
        ),
    )
