"""A run's plan: the experiment validated against config, before any agent call is spent."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ConfigError
from ..config._config import Config
from ..evaluators._evaluator import Evaluator
from ..gates._assertions import RUN_METRICS, Assertion, NoRegression, check_metric, experiment_gates
from ..llm._cache import ResponseCache
from ..llm._providers import Endpoint
from ..results._store import Store

if TYPE_CHECKING:
    from ..experiments._experiment import Experiment



@dataclass
class RunPlan:
    """A validated experiment, ready to run: every check that can fail has already run."""

    experiment: Experiment
    config: Config
    run_id: str
    timestamp: str
    runs: int
    concurrency: int
    judge_concurrency: int
    timeout: float
    endpoints: dict[str, Endpoint | None]
    assertions: list[Assertion]
    tags: list[str]
    evaluators: list[Evaluator]
    total_items: int
    source: Literal["library", "dagster"] = "library"
    parent_run_id: str | None = None
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: The evaluators this run calls; the others keep the scores an item arrives with (a partial rescore).
    scored: frozenset[str] = frozenset()
    #: Working time already spent on this run before it was resumed.
    prior_duration_ms: float = 0.0

    @property
    def store(self) -> Store:
        return Store(self.config.output_path / "cobalt.duckdb")

    def cache(self) -> ResponseCache:
        return ResponseCache(self.config.output_path / "cache", self.config.cache.ttl_seconds,
                             enabled=self.config.cache.enabled)

    def describe(self) -> dict[str, Any]:
        exp = self.experiment
        return {
            "runs": self.runs, "concurrency": self.concurrency, "judge_concurrency": self.judge_concurrency,
            "timeout": self.timeout, "evaluators": [e.describe() for e in self.evaluators],
            "assertions": [a.describe() for a in self.assertions],
            **({"rescored": sorted(self.scored)} if self.parent_run_id else {}),
            "dataset": {"source": exp.dataset.source, "size": self.total_items},
            "runner": getattr(exp.runner, "__qualname__", repr(exp.runner)),
        }


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d%H%M%S") + "-" + uuid.uuid4().hex[:8]


def prepare(experiment: Experiment, config: Config, *, run_id: str | None = None, concurrency: int | None = None,
            timeout: float | None = None, runs: int | None = None, tags: Iterable[str] = (),
            source: Literal["library", "dagster"] = "library", parent_run_id: str | None = None,
            evaluators: Sequence[str] | None = None, items: Sequence[Mapping[str, Any]] | None = None,
            timestamp: str | None = None, update_baselines: bool = False) -> RunPlan:
    """Validate everything that can be validated before the first agent call.

    `evaluators` runs only those names (a partial rescore: the others keep their stored scores);
    `items` validates stored items instead of the dataset's. `update_baselines` leaves out the
    `no_regression` gates: this run is about to become their baseline.
    """
    chosen = _choose_evaluators(experiment, evaluators)
    checked = list(items) if items is not None else list(experiment.dataset)
    if not checked:  # a run of nothing would "pass" every gate it has, and CI would go green on it
        origin = experiment.dataset.source
        raise ConfigError(f"Experiment {experiment.name!r} has no items to run: its dataset"
                          f"{f' ({origin})' if origin else ''} is empty; add items, or check the file or "
                          "filter that built it.")
    for index, item in enumerate(checked):
        for evaluator in chosen:
            evaluator.check_item(item, index)
    endpoints = {e.name: e.endpoint(config) for e in chosen}
    known = [*(e.name for e in experiment.evaluators), *RUN_METRICS]
    assertions = experiment_gates(config, experiment.assertions, (e.name for e in experiment.evaluators))
    if update_baselines:
        assertions = [gate for gate in assertions if not isinstance(gate, NoRegression)]
    for gate in assertions:
        for path in gate.metrics(config):
            check_metric(path, known, f"Assertion {gate.name!r}")
    agent_limit = concurrency or experiment.concurrency or config.concurrency
    if agent_limit < 1:
        raise ConfigError(f"concurrency must be 1 or more, got {agent_limit}.")
    return RunPlan(
        experiment=experiment, config=config, run_id=run_id or new_run_id(),
        timestamp=timestamp or datetime.now(UTC).isoformat(), runs=runs or experiment.runs, concurrency=agent_limit,
        judge_concurrency=experiment.judge_concurrency or config.judge_concurrency or agent_limit,
        timeout=timeout or experiment.timeout or config.timeout, endpoints=endpoints, assertions=assertions,
        tags=list(dict.fromkeys([*experiment.tags, *tags])), source=source, parent_run_id=parent_run_id,
        prices={name: (p.input, p.output) for name, p in config.prices.items()},
        evaluators=list(experiment.evaluators), scored=frozenset(e.name for e in chosen), total_items=len(checked),
    )


def _choose_evaluators(experiment: Experiment, names: Sequence[str] | None) -> list[Evaluator]:
    if not names:
        return list(experiment.evaluators)
    known = {e.name: e for e in experiment.evaluators}
    for name in names:
        if name not in known:
            raise ConfigError(f"Experiment {experiment.name!r} has no evaluator {name!r}; "
                              f"it has {', '.join(known) or 'none'}.")
    return [known[name] for name in names]
