"""Tenants, API keys and the authentication dependency: the only place identity is derived."""
