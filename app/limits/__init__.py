"""Per-tenant limits: a rate of appended messages, and quotas of stored bytes and agent
sessions, each answered with 429 and ``Retry-After`` when reached (off unless configured)."""
