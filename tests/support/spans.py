"""Span trees for the telemetry tests: spans (from the SDK's in-memory exporter or decoded from
OTLP) as nested ``(name, attributes, children)``, and printed one span a line."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Node:
    name: str
    attributes: dict[str, Any]
    span_id: int
    parent_id: int | None
    start: int
    children: list[Node] = field(default_factory=list)

    def shape(self) -> tuple[str, list[Any]]:
        """Names only, nested: what a test compares."""
        return self.name, [child.shape() for child in self.children]


def tree(spans: Iterable[Node]) -> list[Node]:
    """The roots, each with its children in the order they started."""
    nodes = {node.span_id: node for node in spans}
    roots: list[Node] = []
    for node in sorted(nodes.values(), key=lambda node: node.start):
        parent = None if node.parent_id is None else nodes.get(node.parent_id)
        (roots if parent is None else parent.children).append(node)
    return roots


def from_sdk(spans: Iterable[Any]) -> list[Node]:
    """Nodes of ``ReadableSpan``s."""
    return [
        Node(
            span.name,
            dict(span.attributes or {}),
            span.context.span_id,
            None if span.parent is None else span.parent.span_id,
            span.start_time or 0,
        )
        for span in spans
    ]


def render(roots: Iterable[Node], keep: Mapping[str, bool] | None = None, depth: int = 0) -> str:
    """One line per span: its name and attributes, indented under its parent."""
    lines: list[str] = []
    for node in roots:
        shown = ", ".join(f"{key}={value}" for key, value in sorted(node.attributes.items()))
        lines.append(f"{'  ' * depth}{node.name}  [{shown}]")
        if node.children:
            lines.append(render(node.children, keep, depth + 1))
    return "\n".join(lines)
