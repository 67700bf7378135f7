"""ORM tables, one module per aggregate. Importing this package registers every table."""

from app.models.archives import Archive, ArchiveStatus, WmSectionVersion
from app.models.audit import AuditorLogin
from app.models.memories import Memory, MemoryEvent
from app.models.pins import Pin, PinEvent
from app.models.sessions import AgentSession, Message
from app.models.tenancy import ApiKey, Tenant

__all__ = [
    "AgentSession",
    "ApiKey",
    "Archive",
    "ArchiveStatus",
    "AuditorLogin",
    "Memory",
    "MemoryEvent",
    "Message",
    "Pin",
    "PinEvent",
    "Tenant",
    "WmSectionVersion",
]
