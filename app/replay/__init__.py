"""Replay and evaluation: conversations from files fed through the service, and what survives.

An edge like the command line: it reads conversation files and talks to the service over its
HTTP API (in process or on a server), never to a repository or the database directly.
"""
