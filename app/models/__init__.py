"""ORM tables, one module per aggregate. Importing this package registers every table."""

from app.models.archives import (
    Archive,
    ArchiveAction,
    ArchiveStatus,
    ClaimableArchive,
    PreparedGeneration,
    WmSectionVersion,
)
from app.models.audit import AuditorLogin
from app.models.idempotency import IdempotencyKey
from app.models.ledger import ContextRecord
from app.models.lifecycle import ReceiptKey, UserErasure
from app.models.memories import Memory, MemoryEvent, UserMemoryPolicy
from app.models.pins import Pin, PinEvent
from app.models.retention import RetentionPolicy
from app.models.sessions import (
    AgentSession,
    AgentSessionLineage,
    Message,
    MessageRedaction,
    MessageRetraction,
)
from app.models.tenancy import ApiKey, ApiKeyPrefix, Tenant
from app.models.usage import ModelCall
from app.models.webhooks import (
    ClaimableWebhookDelivery,
    WebhookAttempt,
    WebhookDelivery,
    WebhookSubscription,
)

__all__ = [
    "AgentSession",
    "AgentSessionLineage",
    "ApiKey",
    "ApiKeyPrefix",
    "Archive",
    "ArchiveAction",
    "ArchiveStatus",
    "AuditorLogin",
    "ClaimableArchive",
    "ClaimableWebhookDelivery",
    "ContextRecord",
    "IdempotencyKey",
    "Memory",
    "MemoryEvent",
    "Message",
    "MessageRedaction",
    "MessageRetraction",
    "ModelCall",
    "Pin",
    "PinEvent",
    "PreparedGeneration",
    "ReceiptKey",
    "RetentionPolicy",
    "Tenant",
    "UserErasure",
    "UserMemoryPolicy",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookSubscription",
    "WmSectionVersion",
]
