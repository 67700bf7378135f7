"""Audit: the section history as SQL views (``docs/audit.md``), auditor logins, and the ``/ui``
pages that show an agent session's archives, diffs and guard decisions."""
