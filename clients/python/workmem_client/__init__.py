"""The typed Python client of the workmem HTTP API, sync (``WorkmemClient``) and async
(``AsyncWorkmemClient``), on httpx; with extras, the MCP server (``workmem_client.mcp``, extra
``mcp``) and the OpenAI Agents SDK session (``workmem_client.agents``, extra ``agents``).

Results are the API's answers as pydantic models (``workmem_client.models``, generated from the
server's OpenAPI document); errors are the exceptions of ``workmem_client.errors``. The client
speaks HTTP only, so it works against any deployment; it needs httpx and pydantic, nothing of
the server.
"""

from workmem_client.aio import AsyncWorkmemClient
from workmem_client.chat import chat_messages
from workmem_client.config import MissingApiKey
from workmem_client.errors import (
    BadRequestError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
    UnauthenticatedError,
    UnavailableError,
    ValidationError,
    WorkmemConnectionError,
    WorkmemError,
)
from workmem_client.models import (
    AgentSessionPage,
    AgentSessionRead,
    AppendResult,
    ArchiveExpanded,
    ArchivePage,
    ArchiveRead,
    ArchiveStatus,
    BatchAppendResult,
    CommitRead,
    CompactRead,
    ContextRead,
    DecisionRead,
    DeliveryAttemptRead,
    DeliveryPage,
    DeliveryRead,
    HistoryHitRead,
    HistorySearchRead,
    MemoryHitRead,
    MemoryRead,
    MemorySearchRead,
    MessagePage,
    MessageRead,
    PinList,
    PinRead,
    RetractionRead,
    SectionHistoryPage,
    SectionVersionRead,
    WebhookCreated,
    WebhookPage,
    WebhookRead,
    WorkingMemoryRead,
)
from workmem_client.retry import RetryPolicy
from workmem_client.sync import WorkmemClient

__all__ = [
    "AgentSessionPage",
    "AgentSessionRead",
    "AppendResult",
    "ArchiveExpanded",
    "ArchivePage",
    "ArchiveRead",
    "ArchiveStatus",
    "AsyncWorkmemClient",
    "BadRequestError",
    "BatchAppendResult",
    "CommitRead",
    "CompactRead",
    "ConflictError",
    "ContextRead",
    "DecisionRead",
    "DeliveryAttemptRead",
    "DeliveryPage",
    "DeliveryRead",
    "ForbiddenError",
    "HistoryHitRead",
    "HistorySearchRead",
    "MemoryHitRead",
    "MemoryRead",
    "MemorySearchRead",
    "MessagePage",
    "MessageRead",
    "MissingApiKey",
    "NotFoundError",
    "PayloadTooLargeError",
    "PinList",
    "PinRead",
    "RateLimitedError",
    "RetractionRead",
    "RetryPolicy",
    "SectionHistoryPage",
    "SectionVersionRead",
    "UnauthenticatedError",
    "UnavailableError",
    "ValidationError",
    "WebhookCreated",
    "WebhookPage",
    "WebhookRead",
    "WorkingMemoryRead",
    "WorkmemClient",
    "WorkmemConnectionError",
    "WorkmemError",
    "chat_messages",
]
