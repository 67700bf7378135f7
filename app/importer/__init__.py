"""Bringing agent sessions in from other stores: one package per source format."""
