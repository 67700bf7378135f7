"""Runnable examples of using workmem from an agent."""
