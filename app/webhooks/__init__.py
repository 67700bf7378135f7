"""Webhooks: per-tenant subscriptions, a transactional outbox, and the delivery loop (DESIGN 19)."""
