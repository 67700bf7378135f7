"""``workmem-mcp``: workmem's tools and working-memory resources for MCP hosts, on the official
``mcp`` SDK (install ``workmem-client[mcp]``). Talks to a workmem deployment over HTTP with the
typed client; never touches a database."""
