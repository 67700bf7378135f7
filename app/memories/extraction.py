"""Phase 2's memory step before the write: extract candidates and embed them, no transaction open.

Owns choosing the extractor (rules, or the model through the ``record_memories`` tool with the
rules as fallback), the value filter, and the embedding call. Never raises: whatever goes wrong
becomes a ``Prepared`` whose ``failed`` names the stage, so the working memory is never failed or
delayed by long-term memory. Never touches the database (``jobs`` writes the result).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from app.llm.ports import ChatModel, ModelError, Usage
from app.memories import rules, tool
from app.memories.candidates import DEFAULT_VALUE_CONFIG, ValueConfig, value_filter
from app.memories.changes import DEFAULT_DUPLICATE_SIMILARITY
from app.memories.embedding import Embedder, EmbeddingError
from app.memories.hashing import HashingEmbedder
from app.memories.records import (
    Candidate,
    Extraction,
    Failure,
    FailureStage,
    MemoryReport,
    SkipReason,
)
from app.wm.prompts import batch_messages

logger = logging.getLogger(__name__)

ExtractorMode = Literal["rules", "model"]
FALLBACK_EXTRACTOR = "rules_fallback"

ArchivedMessage = tuple[int, Mapping[str, object]]
"""A message of the archive with its seq."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """An archive's candidates (after the value filter) with one vector each, ready to write;
    or the stage at which preparing them failed."""

    extraction: Extraction
    vectors: tuple[list[float], ...] = ()
    embedding_model: str = ""
    failed: Failure | None = None
    usage: Usage = field(default_factory=Usage)
    duplicate_similarity: float = DEFAULT_DUPLICATE_SIMILARITY
    """The cosine at which the write path (``jobs``) takes a candidate for a restatement."""

    def report(
        self, *, added: int = 0, updated: int = 0, superseded: int = 0, not_allowed: int = 0
    ) -> MemoryReport:
        """``not_allowed``: candidates of categories the memory policy does not allow."""
        skipped = dict(self.extraction.skipped)
        if not_allowed:
            skipped[SkipReason.NOT_ALLOWED.value] = not_allowed
        return MemoryReport(
            extractor=self.extraction.extractor,
            added=added,
            updated=updated,
            superseded=superseded,
            skipped=skipped,
            failed=self.failed,
            calls=self.usage.calls,
            prompt_tokens=self.usage.prompt_tokens,
            completion_tokens=self.usage.completion_tokens,
            prompt_version=tool.PROMPT_VERSION if self.usage.calls else None,
        )


def _failed(extraction: Extraction, stage: FailureStage, error: str, usage: Usage) -> Prepared:
    return Prepared(extraction, failed=Failure(stage, error[:500]), usage=usage)


class MemoryExtractor:
    """Extracts and embeds an archive's memories; ``chat`` is used when ``mode`` is ``model``.
    ``duplicate_similarity`` travels with what it prepares to the write path."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        chat: ChatModel | None = None,
        mode: ExtractorMode = "rules",
        fallback: Literal["rules", "none"] = "rules",
        value: ValueConfig = DEFAULT_VALUE_CONFIG,
        rule_config: rules.RuleConfig = rules.DEFAULT_RULE_CONFIG,
        max_input_tokens: int = 24_000,
        duplicate_similarity: float = DEFAULT_DUPLICATE_SIMILARITY,
    ) -> None:
        if mode == "model" and chat is None:
            raise ValueError("the model extractor needs a chat model")
        self.embedder = embedder
        self.chat = chat
        self.mode = mode
        self.fallback = fallback
        self.value = value
        self.rule_config = rule_config
        self.max_input_tokens = max_input_tokens
        self.duplicate_similarity = duplicate_similarity

    @classmethod
    def offline(cls, dim: int = 384) -> MemoryExtractor:
        """Rules and the hashing embedder: what runs without any configuration."""
        return cls(HashingEmbedder(dim))

    async def prepare(
        self, messages: Sequence[ArchivedMessage], *, after: rules.RuleScan | None = None
    ) -> Prepared:
        """The archive's memories, extracted and embedded. With ``after`` (the rules only), the
        archive's first messages were read ahead into that scan and ``messages`` are the rest."""
        if after is not None and not self.reads_ahead:
            raise ValueError("only the rules extractor reads messages ahead")
        usage = Usage()
        try:
            if after is not None:
                extraction = after.read(messages, self.rule_config).extraction()
            else:
                extraction, usage = await self._extract(messages)
        except (ModelError, tool.UnusableArguments) as error:
            if self.fallback == "none":
                return _failed(
                    Extraction((), {}, tool.EXTRACTOR), FailureStage.EXTRACT, str(error), usage
                )
            logger.warning(
                "memory extraction by model failed; rules instead", extra={"error": str(error)}
            )
            extraction = replace(
                rules.extract_memories(messages, self.rule_config), extractor=FALLBACK_EXTRACTOR
            )
        except Exception as error:
            logger.exception("memory extraction failed")
            name = tool.EXTRACTOR if self.mode == "model" else rules.EXTRACTOR
            return _failed(
                Extraction((), {}, name),
                FailureStage.EXTRACT,
                f"{type(error).__name__}: {error}",
                usage,
            )
        kept = value_filter(extraction, self.value)
        if not kept.candidates:
            return Prepared(kept, embedding_model=self.embedder.identity, usage=usage)
        try:
            vectors = await self.embedder.embed(
                [candidate.content for candidate in kept.candidates]
            )
        except EmbeddingError as error:
            return _failed(kept, FailureStage.EMBED, error.message, usage)
        except Exception as error:
            logger.exception("memory embedding failed")
            return _failed(kept, FailureStage.EMBED, f"{type(error).__name__}: {error}", usage)
        return Prepared(
            kept,
            tuple(vectors),
            self.embedder.identity,
            usage=usage,
            duplicate_similarity=self.duplicate_similarity,
        )

    @property
    def reads_ahead(self) -> bool:
        """Whether the messages of an archive may be read ahead of it (``rules.RuleScan``)."""
        return self.mode == "rules" or self.chat is None

    async def _extract(self, messages: Sequence[ArchivedMessage]) -> tuple[Extraction, Usage]:
        if self.mode == "rules" or self.chat is None:
            return rules.extract_memories(messages, self.rule_config), Usage()
        seq_of = {id(message): seq for seq, message in messages}
        archive_seqs = frozenset(seq_of.values())
        usage = Usage()
        candidates: list[Candidate] = []
        skipped: dict[str, int] = {}
        budget = max(2_000, self.max_input_tokens - 2_000)
        for batch in (
            batch_messages([message for _, message in messages], budget=budget) if messages else []
        ):
            numbered = [(seq_of[id(message)], message) for message in batch]
            outcome = await self.chat.call_tool(
                system=tool.SYSTEM_PROMPT,
                user=tool.user_prompt(numbered),
                tool=tool.RECORD_MEMORIES_TOOL,
            )
            usage = usage + outcome.usage
            read = tool.read_arguments(outcome.arguments, archive_seqs)
            candidates += read.candidates
            for reason, count in read.skipped.items():
                skipped[reason] = skipped.get(reason, 0) + count
        return Extraction(tuple(candidates), skipped, tool.EXTRACTOR), usage
