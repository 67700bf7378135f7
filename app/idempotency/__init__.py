"""Idempotent retries: a write sent again under the same ``Idempotency-Key`` gets its first
answer back, byte for byte, and stores nothing twice (appends, batches, commits)."""
