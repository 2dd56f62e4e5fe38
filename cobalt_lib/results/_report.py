"""The records a run produces. `ExperimentReport`'s JSON is the results file."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, model_validator

from ._evaluation_identity import EvaluationIdentity
from ._identity import item_identity
from ._spans import SpanRecord

ItemStatus = Literal["ok", "error", "timeout"]
EvalStatus = Literal["ok", "eval-error"]
RunStatus = Literal["running", "completed", "incomplete", "failed"]

SCHEMA_VERSION = 1
STAT_NAMES = ("mean", "avg", "median", "p50", "p95", "p99", "min", "max", "stddev", "count",
              "pass_rate", "coverage", "errors")


def split_path(path: str) -> tuple[str, str]:
    """`relevance.p95` -> (`relevance`, `p95`); a bare name means its mean."""
    name, dot, stat = path.rpartition(".")
    return (name, stat) if dot and stat in STAT_NAMES else (path, "mean")


class EvalResult(BaseModel):
    """What a `function` evaluator may return (it may also return a float, a bool or a dict)."""

    model_config = ConfigDict(extra="forbid")

    score: float
    reason: str | None = None


class TurnScore(BaseModel):
    """One turn's verdict within a conversation item's evaluation (turns count from 1)."""

    turn: int
    score: float | None = None
    reason: str | None = None
    status: EvalStatus = "ok"
    passed: bool | None = None
    error: str | None = None


class Evaluation(BaseModel):
    """One evaluator's verdict on one output."""

    score: float | None = None
    raw_score: float | None = None
    reason: str | None = None
    status: EvalStatus = "ok"
    passed: bool | None = None
    error: str | None = None
    raw_response: str | None = None
    cached: bool = False
    judge_model: str | None = None
    latency_ms: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    judge_calls: int = 0
    #: A conversation item's per-turn verdicts (a per-turn evaluator's, or a conversational kind's); None otherwise.
    turns: list[TurnScore] | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class ItemResult(BaseModel):
    """One agent call (item x run) and its evaluations."""

    index: int
    run_index: int = 0
    input: Any = None
    item: dict[str, Any] = Field(default_factory=dict)
    input_hash: str = ""
    #: The item's identity (`item_identity`): its `id`, else its content hash. What pairs it across runs.
    item_id: str = ""
    output: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    latency_ms: float | None = None
    status: ItemStatus = "ok"
    error: str | None = None
    traceback: str | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    evaluations: dict[str, Evaluation] = Field(default_factory=dict)
    #: The OpenTelemetry spans the agent call emitted (`_spans.SpanRecord`), for the trace evaluators: stored
    #: in the `spans` table, never in the results file.
    spans: list[SpanRecord] = Field(default_factory=list, exclude=True, repr=False)

    @model_validator(mode="after")
    def _identify(self) -> ItemResult:
        """An item read from an older store or results file has no `item_id`: derive it (its `id`, else
        the stored `input_hash`, else the hash of the stored item)."""
        if self.item_id or not (self.item or self.input_hash):
            return self
        given = self.item.get("id")
        has_id = given is not None and given != ""
        self.item_id = item_identity(self.item) if has_id or not self.input_hash else self.input_hash
        return self


class Stats(BaseModel):
    """Statistics of one metric; `avg` is the mean (`mean` reads it too)."""

    avg: float | None = None
    median: float | None = None
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    min: float | None = None
    max: float | None = None
    stddev: float | None = None
    count: int = 0
    errors: int = 0
    coverage: float | None = None
    pass_rate: float | None = None

    @property
    def mean(self) -> float | None:
        return self.avg

    def get(self, stat: str) -> float | None:
        """A statistic by name; `mean` and `avg`, `median` and `p50` are aliases."""
        value = getattr(self, {"mean": "avg"}.get(stat, stat))
        return None if value is None else float(value)


class ItemSpread(BaseModel):
    """With runs > 1: one item's scores across its runs, per evaluator."""

    index: int
    runs: int
    evaluators: dict[str, Stats]


class Summary(BaseModel):
    total_items: int = 0
    total_runs: int = 0
    ok: int = 0
    errors: int = 0
    timeouts: int = 0
    total_duration_ms: float = 0.0
    avg_latency_ms: float | None = None
    total_tokens: int = 0
    agent_tokens: int = 0
    judge_tokens: int = 0
    judge_calls: int = 0
    cached_scores: int = 0
    estimated_cost: float | None = None
    agent_cost: float | None = None
    judge_cost: float | None = None
    scores: dict[str, Stats] = Field(default_factory=dict)
    metrics: dict[str, Stats] = Field(default_factory=dict)
    per_item: list[ItemSpread] = Field(default_factory=list)


class AssertionResult(BaseModel):
    name: str
    gate: str = ""  # the gate that produced it (no_regression yields one result per metric)
    passed: bool
    message: str = ""
    actual: float | None = None
    expected: float | None = None


#: The key of a baseline file holding the evaluation identity of the run it was written from.
BASELINE_IDENTITY_KEY = "$identity"
#: The key of a baseline file listing its run's item identities: an item missing from a later run is named.
BASELINE_ITEMS_KEY = "$items"


class ExperimentReport(BaseModel):
    """Everything one run produced. Written to `.cobalt/results/` and to the DuckDB store."""

    schema_version: int = SCHEMA_VERSION
    id: str
    name: str
    timestamp: str
    status: RunStatus = "completed"
    source: Literal["library", "dagster", "monitor"] = "library"
    parent_run_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)
    #: In an experiment with variants: which variant this run is (its parameters are `config["variant"]`),
    #: and the run group of the runs of every variant started together.
    variant: str | None = None
    group_id: str | None = None
    summary: Summary = Field(default_factory=Summary)
    #: A list when loaded from a file or the store; a run's own report reads its items back from disk
    #: (`StoredItems`, read-only) so a run's memory stays flat in its number of items.
    items: Sequence[ItemResult] = Field(default_factory=list)
    assertions: list[AssertionResult] = Field(default_factory=list)
    results_path: str | None = None
    #: What the run measured with: dataset, evaluators, agent, cobalt version (None: stored before identities).
    identity: EvaluationIdentity | None = None

    @field_serializer("items")
    def _items_as_list(self, items: Sequence[ItemResult]) -> list[ItemResult]:
        return items if isinstance(items, list) else list(items)

    @property
    def passed(self) -> bool:
        """True when the run completed and every assertion passed: a run that is still going, was
        interrupted, killed or failed has not passed, whatever gates it has (often none yet)."""
        return self.status == "completed" and all(a.passed for a in self.assertions)

    def metric(self, path: str) -> float | None:
        """A statistic by dot path: `relevance`, `relevance.p95`, `latency.p99`, `cost.mean`."""
        name, stat = split_path(path)
        stats = self.summary.scores.get(name) or self.summary.metrics.get(name)
        return None if stats is None else stats.get(stat)

    def baseline(self, *, metrics: bool | Iterable[str] = False) -> dict[str, float]:
        """`{evaluator: mean}`, what `no_regression` compares with. `metrics=True` adds latency, cost
        and tokens (whose noise between identical runs can exceed a tolerance, hence opt-in); a list
        of names adds only those."""
        values = {name: s.avg for name, s in self.summary.scores.items() if s.avg is not None}
        wanted = set(self.summary.metrics) if metrics is True else set(metrics or ())
        values.update({n: s.avg for n, s in self.summary.metrics.items() if n in wanted and s.avg is not None})
        return values

    def baseline_text(self, *, metrics: bool | Iterable[str] = False) -> str:
        """The baseline file's JSON: `baseline(metrics=...)`, the run's evaluation identity under
        `$identity` (what the means measured: `no_regression` refuses a run measured otherwise) and its
        items' identities under `$items` (an item a later run lacks is named, never passed over)."""
        data: dict[str, Any] = dict(self.baseline(metrics=metrics))
        if self.identity is not None:
            data[BASELINE_IDENTITY_KEY] = self.identity.model_dump(mode="json")
        data[BASELINE_ITEMS_KEY] = self.item_ids()
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    def item_ids(self) -> list[str]:
        """The identities of the run's items (each once, in dataset order)."""
        return list(dict.fromkeys(item.item_id or item_identity(item.item) for item in self.items))

    def save_baseline(self, path: str | Path, *, metrics: bool | Iterable[str] = False) -> Path:
        """Write `baseline(metrics=...)` as JSON to `path`, for `no_regression(path)`, with the run's
        evaluation identity under `$identity`."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.baseline_text(metrics=metrics), encoding="utf-8")
        return target
