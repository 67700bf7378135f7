"""Commit (phase 1), the archive worker (phase 2), expand and retry; working memory reads."""
