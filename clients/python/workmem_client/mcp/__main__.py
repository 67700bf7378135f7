"""``python -m workmem_client.mcp``: the same as ``workmem-mcp``."""

from workmem_client.mcp.command import main

main()
