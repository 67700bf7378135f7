"""Context assembly and compact: what the agent sends to its model next."""
