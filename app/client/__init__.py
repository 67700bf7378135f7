"""The typed Python client of the workmem HTTP API, sync (``WorkmemClient``) and async
(``AsyncWorkmemClient``), on httpx.

Results are the API's own response schemas; errors are the exceptions of ``app.client.errors``.
The client speaks HTTP only, so it works against any deployment; it never touches a database.
"""

from app.archives.schemas import (
    ArchiveExpanded,
    ArchivePage,
    ArchiveRead,
    CommitRead,
    DecisionRead,
    SectionHistoryPage,
    SectionVersionRead,
    WorkingMemoryRead,
)
from app.client.aio import AsyncWorkmemClient
from app.client.errors import (
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
from app.client.models import chat_messages
from app.client.retry import RetryPolicy
from app.client.sync import WorkmemClient
from app.context.schemas import CompactRead, ContextRead
from app.history.schemas import HistoryHitRead, HistorySearchRead
from app.memories.schemas import MemoryHitRead, MemoryRead, MemorySearchRead
from app.pins.schemas import PinList, PinRead
from app.sessions.schemas import (
    AgentSessionPage,
    AgentSessionRead,
    AppendResult,
    BatchAppendResult,
    MessagePage,
    MessageRead,
    RetractionRead,
)
from app.webhooks.schemas import (
    DeliveryAttemptRead,
    DeliveryPage,
    DeliveryRead,
    WebhookCreated,
    WebhookPage,
    WebhookRead,
)

__all__ = [
    "AgentSessionPage",
    "AgentSessionRead",
    "AppendResult",
    "ArchiveExpanded",
    "ArchivePage",
    "ArchiveRead",
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
