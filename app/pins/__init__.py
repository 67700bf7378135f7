"""Pins: what an agent session must never lose from its context (DESIGN 18)."""
