"""A trace as a tree: each span under its parent, siblings in the order they started."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ..results._spans import SpanRecord
from ._genai import model_calls, tokens_of, tool_calls


@dataclass
class SpanNode:
    span: SpanRecord
    children: list[SpanNode] = field(default_factory=list)


def span_tree(spans: Sequence[SpanRecord]) -> list[SpanNode]:
    """The roots of the trace (spans whose parent is not in it), each with its descendants."""
    nodes = {s.span_id: SpanNode(s) for s in spans}
    roots: list[SpanNode] = []
    for node in sorted(nodes.values(), key=lambda n: n.span.start_ns):
        parent = nodes.get(node.span.parent_id or "")
        (parent.children if parent is not None and parent is not node else roots).append(node)
    return roots


def walk(nodes: Sequence[SpanNode], depth: int = 0) -> Iterator[tuple[int, SpanRecord]]:
    """Every span of the tree with its depth, parents before children."""
    for node in nodes:
        yield depth, node.span
        yield from walk(node.children, depth + 1)


@dataclass(frozen=True)
class TraceSummary:
    """A trace in numbers: spans, model calls and their tokens, tool calls, wall time (ms)."""

    spans: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    tool_calls: int
    wall_ms: float | None


def summarise(spans: Sequence[SpanRecord]) -> TraceSummary:
    models = model_calls(spans)
    tokens = [tokens_of(s) for s in models]
    ends = [s.start_ns + s.duration_ms * 1e6 for s in spans if s.duration_ms is not None]
    wall = (max(ends) - min(s.start_ns for s in spans)) / 1e6 if ends else None
    return TraceSummary(spans=len(spans), model_calls=len(models), input_tokens=sum(t[0] or 0 for t in tokens),
                        output_tokens=sum(t[1] or 0 for t in tokens), tool_calls=len(tool_calls(spans)),
                        wall_ms=wall)
