"""What an evaluator kind scores with: the output in context, and what the run lends it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._threads import DaemonThreads
    from ..llm._judge import Judge
    from ..llm._providers import Endpoint
    from ..results._spans import SpanRecord


@dataclass(frozen=True)
class EvalContext:
    """What a `function` evaluator (and every kind's `score`) receives: the item and the agent's output."""

    item: dict[str, Any]
    output: Any
    metadata: dict[str, Any] = field(default_factory=dict)
    index: int = 0
    run_index: int = 0
    #: The agent call's own metrics (None when unknown), for `max_latency`, `max_cost`, `max_tokens`.
    latency_ms: float | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    #: The OpenTelemetry spans the agent call emitted (`results.SpanRecord`), in the order they ended.
    spans: tuple[SpanRecord, ...] = ()

    @property
    def input(self) -> Any:
        return self.item.get("input")

    @property
    def expected_output(self) -> Any:
        return self.item.get("expected_output")


@dataclass(frozen=True)
class Scoring:
    """What the run lends a kind to score one output: its evaluator's name and pass mark, the judge
    (model calls, cache, prices), the resolved endpoint, worker threads for sync user code and the
    per-call timeout in seconds."""

    evaluator: str
    threshold: float
    judge: Judge | None = None
    endpoint: Endpoint | None = None
    threads: DaemonThreads | None = None
    timeout: float | None = None
