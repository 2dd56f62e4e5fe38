"""A run's plan: the experiment validated against config, before any agent call is spent."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ConfigError
from ..config._config import Config
from ..evaluators._evaluator import Evaluator
from ..gates._assertions import (
    RUN_METRICS,
    Assertion,
    NoRegression,
    check_evaluator,
    check_metric,
    experiment_gates,
)
from ..llm._batch_wire import supports_batches
from ..llm._cache import ResponseCache
from ..llm._providers import Endpoint
from ..results._evaluation_identity import EvaluationIdentity
from ..results._report import ItemResult
from ..store._store import Store
from ._conversation import check_conversations
from ._identity import evaluation_identity
from ._requests import FailedItemsRun, FreshRun, PartitionRun, RescoreRun, ResumeRun, RunRequest
from ._variant import Variant

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
    source: Literal["library", "dagster", "monitor"] = "library"
    parent_run_id: str | None = None
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: Who plays the simulated users of the run's conversation items; None when no item has one.
    simulator: Endpoint | None = None
    #: The evaluators this run calls; the others keep the scores an item arrives with (a partial rescore).
    scored: frozenset[str] = frozenset()
    #: How the run started: what `execute` does besides a fresh run (resume the stored items, rescore outputs).
    request: RunRequest = field(default_factory=FreshRun)
    #: The dataset indices this run covers, when only some (the failed items of its parent, the items a
    #: pytest -k selected); None: all.
    indices: tuple[int, ...] | None = None
    #: Judge through the provider's batch API (`[judge] batch`, or the run's request).
    judge_batch: bool = False
    #: The variant this run is, when the experiment has variants (`ctx.variant` is its parameters).
    variant: Variant | None = None
    #: The run group: the runs of every variant started together (`cobalt run` of an experiment with variants).
    group_id: str | None = None
    #: What the run measures with (`measured_with`), once known: computed, or read from the store.
    identity: EvaluationIdentity | None = None

    @property
    def store(self) -> Store:
        return Store.for_config(self.config)

    def measured_with(self) -> EvaluationIdentity:
        """The run's evaluation identity, computed on first use: a run computes it once, when it starts
        (it hashes every dataset item); a Dagster shard, which needs none, never does."""
        if self.identity is None:
            self.identity = evaluation_identity(self.experiment, self.experiment.evaluators, self.endpoints,
                                                self.config.root)
        return self.identity

    def cache(self) -> ResponseCache:
        return ResponseCache(self.config.output_path / "cache", self.config.cache.ttl_seconds,
                             enabled=self.config.cache.enabled)

    def describe(self) -> dict[str, Any]:
        exp = self.experiment
        return {
            "runs": self.runs, "concurrency": self.concurrency, "judge_concurrency": self.judge_concurrency,
            "timeout": self.timeout, "evaluators": [e.describe() for e in self.evaluators],
            "assertions": [a.describe() for a in self.assertions],
            **({"rescored": sorted(self.scored)} if isinstance(self.request, RescoreRun) else {}),
            **({"indices": list(self.indices)} if self.indices is not None else {}),
            **({"judge_batch": True} if self.judge_batch else {}),
            **({"variant": self.variant.describe()} if self.variant is not None else {}),
            "dataset": {"source": exp.dataset.source,
                        "size": self.total_items if self.indices is None else len(exp.dataset)},
            "runner": getattr(exp.runner, "__qualname__", repr(exp.runner)),
        }


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d%H%M%S") + "-" + uuid.uuid4().hex[:8]


@dataclass(frozen=True)
class _Shape:
    """What a request fixes about its plan; `None` options fall back to the experiment, then config."""

    run_id: str
    timestamp: str
    concurrency: int | None = None
    timeout: float | None = None
    runs: int | None = None
    tags: tuple[str, ...] = ()
    source: Literal["library", "dagster", "monitor"] = "library"
    parent_run_id: str | None = None
    evaluators: tuple[str, ...] = ()
    items: list[Mapping[str, Any]] | None = None
    update_baselines: bool = False
    indices: tuple[int, ...] | None = None


def _shape(request: RunRequest) -> _Shape:
    now = datetime.now(UTC).isoformat()
    match request:
        case FreshRun():
            return _Shape(request.run_id or new_run_id(), now, request.concurrency, request.timeout, request.runs,
                          tuple(request.tags), update_baselines=request.update_baselines, indices=request.indices,
                          source=request.source)
        case ResumeRun():
            return _Shape(request.run_id, request.timestamp, request.concurrency, request.timeout, request.runs,
                          tuple(request.tags), indices=request.indices)
        case FailedItemsRun():
            return _Shape(new_run_id(), now, request.concurrency, request.timeout, request.runs, tuple(request.tags),
                          parent_run_id=request.parent_run_id, indices=request.indices)
        case RescoreRun():
            runs = max((o.run_index for o in request.outputs), default=0) + 1
            return _Shape(new_run_id(), now, runs=runs, parent_run_id=request.parent_run_id,
                          evaluators=tuple(request.evaluators), items=_distinct_items(request.outputs))
        case PartitionRun():
            return _Shape(request.run_id, request.timestamp or now, request.concurrency, tags=tuple(request.tags),
                          source="dagster")
    raise TypeError(f"Not a run request: {request!r}")


def _distinct_items(outputs: Sequence[ItemResult]) -> list[Mapping[str, Any]]:
    """One dataset item per distinct index of a stored run's outputs, ordered by index."""
    by_index: dict[int, Mapping[str, Any]] = {}
    for output in sorted(outputs, key=lambda o: (o.index, o.run_index)):
        by_index.setdefault(output.index, output.item)
    return [by_index[i] for i in sorted(by_index)]


def prepare(experiment: Experiment, config: Config, request: RunRequest | None = None) -> RunPlan:
    """Validate everything that can be validated before the first agent call (default: a FreshRun).

    A rescore validates the stored items instead of the dataset's and runs only the evaluators it
    names (the others keep their stored scores); `FreshRun(update_baselines=True)` leaves out the
    `no_regression` gates: this run is about to become their baseline.
    """
    request = request if request is not None else FreshRun()
    shape = _shape(request)
    variant = run_variant(experiment, getattr(request, "variant", None))
    chosen = _choose_evaluators(experiment, shape.evaluators)
    total = _check_items(experiment, chosen, shape.items, shape.indices)
    endpoints = {e.name: e.endpoint(config) for e in chosen}
    played = range(len(experiment.dataset)) if shape.indices is None else shape.indices
    simulator = None if shape.items is not None else check_conversations(experiment, config, played)
    assertions = [gate for gate in _gates(experiment, config, update_baselines=shape.update_baselines)
                  if gate.applies_to(variant.name if variant else None)]
    config.traces.exporting()  # a malformed COBALT_EXPORT_EVALUATIONS is said before any agent call
    agent_limit = shape.concurrency or experiment.concurrency or config.concurrency
    if agent_limit < 1:
        raise ConfigError(f"concurrency must be 1 or more, got {agent_limit}.")
    judge_batch = config.judge.batch_mode() if request.judge_batch is None else request.judge_batch
    if judge_batch:
        _check_batchable(endpoints)
        _check_batch_api(endpoints)
    return RunPlan(
        experiment=experiment, config=config, run_id=shape.run_id, timestamp=shape.timestamp,
        runs=shape.runs or experiment.runs, concurrency=agent_limit,
        judge_concurrency=experiment.judge_concurrency or config.judge_concurrency or agent_limit,
        timeout=shape.timeout or experiment.timeout or config.timeout,
        endpoints=endpoints, assertions=assertions, simulator=simulator,
        tags=list(dict.fromkeys([*experiment.tags, *shape.tags])), source=shape.source,
        parent_run_id=shape.parent_run_id, prices={name: (p.input, p.output) for name, p in config.prices.items()},
        evaluators=list(experiment.evaluators), scored=frozenset(e.name for e in chosen), total_items=total,
        request=request, indices=shape.indices, judge_batch=judge_batch, variant=variant,
        group_id=getattr(request, "group_id", None) if variant is not None else None,
    )


def _check_batchable(endpoints: Mapping[str, Endpoint | None]) -> None:
    """Batch judging needs a provider with a batch API: say which evaluator's has none."""
    for name, endpoint in endpoints.items():
        if endpoint is not None and not supports_batches(endpoint):
            raise ConfigError(f"evaluator {name!r} judges with {endpoint.label}, and {endpoint.provider} has no batch "
                              "API; judge it with provider openai or anthropic, or run without batch judging "
                              "([judge] batch = false, COBALT_JUDGE_BATCH=0 or --no-judge-batch).")


def _check_batch_api(endpoints: Mapping[str, Endpoint | None]) -> None:
    """An OpenAI-compatible server without the Batch API is said now, not after every agent call was spent."""
    from .._aio import run_anywhere
    from ..llm._batch_wire import has_batch_api, speaks_openai_batches_for_sure
    from ..llm._wire import Clients

    asked = {e: name for name, e in reversed(list(endpoints.items()))
             if e is not None and not speaks_openai_batches_for_sure(e)}

    async def ask() -> list[tuple[str, Endpoint, str]]:
        clients = Clients()
        try:
            missing = []
            for endpoint, name in asked.items():
                found, shown = await has_batch_api(clients, endpoint)
                if found is False:
                    missing.append((name, endpoint, shown))
            return missing
        finally:
            await clients.aclose()

    for name, endpoint, shown in run_anywhere(ask()) if asked else []:
        raise ConfigError(f"evaluator {name!r} judges with {endpoint.label}, whose server has no batch API "
                          f"(GET {shown} was not found); run without batch judging ([judge] batch = false, "
                          "COBALT_JUDGE_BATCH=0 or --no-judge-batch), or judge with a server that has one.")


def run_variant(experiment: Experiment, name: str | None) -> Variant | None:
    """The variant a run of `experiment` is: the one `name`d, else its baseline; None without variants."""
    if not experiment.variants:
        if name is not None:
            raise ConfigError(f"Experiment {experiment.name!r} declares no variants, so it has no variant {name!r}.")
        return None
    if name is None:
        return experiment.baseline_variant
    found = next((v for v in experiment.variants if v.name == name), None)
    if found is None:
        raise ConfigError(f"Experiment {experiment.name!r} has no variant {name!r}; its variants are "
                          f"{', '.join(repr(v.name) for v in experiment.variants)}.")
    return found


def _check_items(experiment: Experiment, chosen: list[Evaluator], items: list[Mapping[str, Any]] | None,
                 indices: tuple[int, ...] | None = None) -> int:
    """Every item against every evaluator that will score it; returns how many items there are."""
    if indices is not None:
        for index in indices:
            for evaluator in chosen:
                evaluator.check_item(experiment.dataset[index], index)
        return len(indices)
    checked = items if items is not None else list(experiment.dataset)
    if not checked:  # a run of nothing would "pass" every gate it has, and CI would go green on it
        origin = experiment.dataset.source
        raise ConfigError(f"Experiment {experiment.name!r} has no items to run: its dataset"
                          f"{f' ({origin})' if origin else ''} is empty; add items, or check the file or "
                          "filter that built it.")
    for index, item in enumerate(checked):
        for evaluator in chosen:
            evaluator.check_item(item, index)
    return len(checked)


def _gates(experiment: Experiment, config: Config, *, update_baselines: bool) -> list[Assertion]:
    """The experiment's gates and config's thresholds, each checked to name a metric the run has."""
    known = [*(e.name for e in experiment.evaluators), *RUN_METRICS]
    assertions = experiment_gates(config, experiment.assertions, (e.name for e in experiment.evaluators),
                                  max_error_rate=experiment.max_error_rate)
    if update_baselines:
        assertions = [gate for gate in assertions if not isinstance(gate, NoRegression)]
    for gate in assertions:
        for path in gate.metrics(config):
            check_metric(path, known, f"Assertion {gate.name!r}")
        for name in gate.evaluator_names():
            check_evaluator(name, (e.name for e in experiment.evaluators), f"Assertion {gate.name!r}")
    return assertions


def _choose_evaluators(experiment: Experiment, names: Sequence[str] | None) -> list[Evaluator]:
    if not names:
        return list(experiment.evaluators)
    known = {e.name: e for e in experiment.evaluators}
    for name in names:
        if name not in known:
            raise ConfigError(f"Experiment {experiment.name!r} has no evaluator {name!r}; "
                              f"it has {', '.join(known) or 'none'}.")
    return [known[name] for name in names]
