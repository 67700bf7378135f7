"""Message search: full-text search over one agent session's raw messages (DESIGN 18)."""
