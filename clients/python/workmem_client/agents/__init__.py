"""workmem as the memory of an OpenAI Agents SDK agent: ``WorkmemSession`` implements the SDK's
``Session`` protocol over the context and append routes (install ``workmem-client[agents]``).

Talks to workmem over HTTP with the typed client; never touches a database.
"""

from workmem_client.agents.session import WorkmemSession

__all__ = ["WorkmemSession"]
