"""Portable bundles: a tenant's (or one user's, or one agent session's) data out of one service
and into another, as a checksummed, zstd-compressed tar of JSON lines."""
