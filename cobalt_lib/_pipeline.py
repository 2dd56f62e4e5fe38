"""The four stages (outputs, scores, aggregates, verdicts) as plain functions over typed records.

The library chains them item by item (`execute`); the Dagster assets call the stage functions
one asset per stage. Both share `prepare`, `produce`, `score`, `summarise` and `judge_verdicts`.
"""

from __future__ import annotations

import asyncio
import math
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from . import _stats
from ._agent import AgentContext, DaemonThreads, call_agent
from ._aio import is_async_callable
from ._assertions import RUN_METRICS, Assertion, NoRegression, check_metric, experiment_gates
from ._cache import ResponseCache
from ._config import Config
from ._errors import ConfigError
from ._evaluators import EvalContext, Evaluator
from ._judge import Judge
from ._providers import Endpoint, import_sdks
from ._report import AssertionResult, ExperimentReport, ItemResult, ItemSpread, Stats, Summary
from ._results import write_results
from ._rows import aggregate_rows, output_row, run_row, score_rows, verdict_rows
from ._store import BatchWriter, Store

if TYPE_CHECKING:
    from ._experiment import Experiment

T = TypeVar("T")


class Observer(Protocol):
    """Receives progress; the terminal reporter and the MCP server implement it.

    `on_item` gets each item once, scored. An observer may also define `on_output(item)`: the
    Dagster path, which runs every agent call before any scoring, calls it as each output arrives.
    """

    def on_start(self, plan: RunPlan) -> None: ...
    def on_item(self, item: ItemResult) -> None: ...
    def on_finish(self, report: ExperimentReport) -> None: ...


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


class Session:
    """What one run shares across items: the judge's clients and cache, the agent's threads and limit."""

    def __init__(self, plan: RunPlan) -> None:
        self.plan = plan
        import_sdks(plan.endpoints[e.name] for e in plan.evaluators if e.name in plan.scored)
        self.judge = Judge(plan.cache(), plan.judge_concurrency, plan.prices)
        self.agent_limit = asyncio.Semaphore(plan.concurrency)
        runner = plan.experiment.runner
        self.threads = None if is_async_callable(runner) else DaemonThreads(plan.concurrency)
        #: For sync function evaluators; threads start on first use.
        self.eval_threads = DaemonThreads(plan.concurrency + plan.judge_concurrency, name="cobalt-evaluator")
        #: Where an agent output goes the moment it exists (the store, when the stage writes outputs).
        self.output_sink: Callable[[ItemResult], None] = lambda item: None

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.threads is not None:
            self.threads.shutdown()
        self.eval_threads.shutdown()
        await self.judge.aclose()


async def produce(session: Session, index: int, run_index: int) -> ItemResult:
    """Stage 1 for one item: call the agent."""
    plan = session.plan
    ctx = AgentContext(item=plan.experiment.dataset[index], index=index, run_index=run_index)
    return await call_agent(plan.experiment.runner, ctx, timeout=plan.timeout, limit=session.agent_limit,
                            threads=session.threads, prices=plan.prices)


async def score(session: Session, item: ItemResult) -> ItemResult:
    """Stage 2 for one item: every evaluator on an ok output, concurrently."""
    if item.status != "ok":
        return item
    plan = session.plan
    evaluators = [e for e in plan.evaluators if e.name in plan.scored]
    ctx = EvalContext(item=item.item, output=item.output, metadata=item.metadata, index=item.index,
                      run_index=item.run_index)
    results = await asyncio.gather(*(e.evaluate(ctx, session.judge, plan.endpoints[e.name],
                                                threads=session.eval_threads, timeout=plan.timeout)
                                     for e in evaluators))
    fresh = {e.name: r for e, r in zip(evaluators, results, strict=True)}
    kept = item.evaluations
    item.evaluations = {e.name: fresh.get(e.name) or kept[e.name] for e in plan.evaluators
                        if e.name in fresh or e.name in kept}
    return item


async def bounded(args: Iterable[T], limit: int, fn: Callable[[T], Awaitable[None]]) -> None:
    """Run `fn` over `args` with at most `limit` in flight; memory stays flat in the number of args."""
    slots = asyncio.Semaphore(limit)
    tasks: set[asyncio.Task[None]] = set()
    failure: list[BaseException] = []

    def done(task: asyncio.Task[None]) -> None:
        tasks.discard(task)
        slots.release()
        if not task.cancelled() and task.exception() is not None:
            failure.append(task.exception())  # type: ignore[arg-type]

    try:
        for arg in args:
            await slots.acquire()
            if failure:
                break
            task: asyncio.Task[None] = asyncio.create_task(fn(arg))  # type: ignore[arg-type]
            tasks.add(task)
            task.add_done_callback(done)
        while tasks and not failure:
            await asyncio.wait(set(tasks), return_when=asyncio.FIRST_EXCEPTION)
        if failure:
            raise failure[0]
    finally:
        for task in list(tasks):
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def item_keys(plan: RunPlan) -> Iterable[tuple[int, int]]:
    return ((index, run_index) for index in range(len(plan.experiment.dataset)) for run_index in range(plan.runs))


def summarise(plan: RunPlan, items: list[ItemResult], duration_ms: float) -> Summary:
    """Stage 3: per-evaluator statistics and run metrics (latency, cost, tokens)."""
    ok = [i for i in items if i.status == "ok"]
    evaluations = [ev for i in items for ev in i.evaluations.values()]
    fresh = [ev for ev in evaluations if not ev.cached]
    agent_cost = _known_sum([i.cost_usd for i in ok]) if any(i.cost_usd is not None for i in ok) else None
    agent_tokens = sum(i.tokens or 0 for i in items)
    if plan.parent_run_id is not None:  # a rescore calls no agent: the outputs' cost was paid by the parent run
        agent_cost, agent_tokens = 0.0, 0
    judge_cost = _known_sum([ev.cost_usd for ev in fresh if ev.judge_calls])
    summary = Summary(
        total_items=plan.total_items, total_runs=len(items), ok=len(ok),
        errors=sum(i.status == "error" for i in items), timeouts=sum(i.status == "timeout" for i in items),
        total_duration_ms=duration_ms, avg_latency_ms=_stats.mean(_latencies(items)),
        agent_tokens=agent_tokens, judge_tokens=sum(ev.tokens for ev in fresh),
        judge_calls=sum(ev.judge_calls for ev in evaluations), cached_scores=sum(ev.cached for ev in evaluations),
        agent_cost=agent_cost, judge_cost=judge_cost,
        estimated_cost=None if agent_cost is None or judge_cost is None else agent_cost + judge_cost,
    )
    summary.total_tokens = summary.agent_tokens + summary.judge_tokens
    for evaluator in plan.evaluators:
        summary.scores[evaluator.name] = _score_stats([i.evaluations[evaluator.name] for i in items
                                                       if evaluator.name in i.evaluations], len(items))
    summary.metrics = {
        "latency": _describe(_latencies(items)),
        "cost": _describe([i.cost_usd for i in ok if i.cost_usd is not None]),
        "tokens": _describe([float(i.tokens) for i in ok if i.tokens is not None]),
    }
    if plan.runs > 1:
        summary.per_item = _spreads(plan, items)
    return summary


def _latencies(items: list[ItemResult]) -> list[float]:
    """Agent latencies of ok and timed-out calls: a timeout took at least the timeout, and leaving it
    out would let latency gates pass exactly when the agent is slowest."""
    return [i.latency_ms for i in items if i.status != "error" and i.latency_ms is not None]


def _score_stats(evaluations: list[Any], attempts: int) -> Stats:
    """Statistics of the usable scores; `errors` counts eval-errors. Coverage and pass rate are over
    every attempted agent call, so a failed or timed-out call counts as unscored and not passed: a
    flaky agent cannot look solid."""
    scored = [ev for ev in evaluations if ev.status == "ok" and ev.score is not None]
    stats = _describe([ev.score for ev in scored])
    stats.errors = sum(ev.status != "ok" for ev in evaluations)
    stats.coverage = len(scored) / attempts if attempts else None
    stats.pass_rate = sum(bool(ev.passed) for ev in scored) / attempts if attempts else None
    return stats


def _describe(values: list[float]) -> Stats:
    return Stats.model_validate(_stats.describe(values))


def _spreads(plan: RunPlan, items: list[ItemResult]) -> list[ItemSpread]:
    by_index: dict[int, list[ItemResult]] = {}
    for item in items:
        by_index.setdefault(item.index, []).append(item)
    return [
        ItemSpread(index=index, runs=len(group), evaluators={
            e.name: _score_stats([i.evaluations[e.name] for i in group if e.name in i.evaluations], len(group))
            for e in plan.evaluators})
        for index, group in sorted(by_index.items())
    ]


def _known_sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else math.fsum(v for v in values if v is not None)


def judge_verdicts(plan: RunPlan, report: ExperimentReport) -> list[AssertionResult]:
    """Stage 4: every assertion over the aggregates; an unfinished run fails its gates."""
    verdicts = [result.model_copy(update={"gate": gate.name}) for gate in plan.assertions
                for result in gate.evaluate(report, plan.config)]
    if report.status != "completed":
        verdicts.append(AssertionResult(name="run completed", passed=False,
                                        message=f"the run is {report.status}: only finished items were scored"))
    return verdicts


def build_report(plan: RunPlan, items: list[ItemResult], duration_ms: float,
                 status: Literal["completed", "incomplete", "failed"]) -> ExperimentReport:
    items = sorted(items, key=lambda i: (i.index, i.run_index))
    report = ExperimentReport(
        id=plan.run_id, name=plan.experiment.name, timestamp=plan.timestamp, status=status, source=plan.source,
        parent_run_id=plan.parent_run_id, tags=plan.tags, config=plan.describe(),
        summary=summarise(plan, items, duration_ms), items=items,
    )
    report.assertions = judge_verdicts(plan, report)
    return report


def save(plan: RunPlan, report: ExperimentReport) -> None:
    """Write the results JSON, then the run row, aggregates and verdicts in one transaction."""
    report.results_path = str(write_results(report, plan.config.output_path / "results"))
    plan.store.finish_run(run_row(report, finished=True), aggregate_rows(report), verdict_rows(report))


def start_run(plan: RunPlan) -> None:
    """Record the run as `running` before any agent call."""
    pending = ExperimentReport(id=plan.run_id, name=plan.experiment.name, timestamp=plan.timestamp,
                               status="running", source=plan.source, parent_run_id=plan.parent_run_id,
                               tags=plan.tags, config=plan.describe())
    plan.store.start_run(run_row(pending, finished=False))


Step = Callable[[Session, T], Awaitable[ItemResult]]


async def stream(plan: RunPlan, keys: Iterable[T], step: Step[T], *, tables: Sequence[str],
                 observer: Observer | None = None, into: list[ItemResult] | None = None) -> list[ItemResult]:
    """Run `step` over `keys` (bounded), writing each finished item's rows to `tables` as it finishes.

    Finished items land in `into` (and the store) even when the stage is interrupted.
    """
    items = into if into is not None else []
    writer = BatchWriter(plan.store)

    async def one(key: T) -> None:
        item = await step(session, key)
        if "scores" in tables:
            for row in score_rows(plan.run_id, item):
                writer.add("scores", row)
        items.append(item)
        if observer:
            observer.on_item(item)

    try:
        async with Session(plan) as session:
            if "outputs" in tables:
                session.output_sink = lambda item: writer.add("outputs", output_row(plan.run_id, item))
            await bounded(keys, 2 * (plan.concurrency + plan.judge_concurrency), one)
    finally:
        writer.close()
    return items


async def agent_step(session: Session, key: tuple[int, int]) -> ItemResult:
    item = await produce(session, *key)
    session.output_sink(item)
    return item


async def full_step(session: Session, key: tuple[int, int]) -> ItemResult:
    # The output is stored before the judge runs: a crash while judging keeps the paid-for agent call.
    return await score(session, await agent_step(session, key))


async def rescore_step(session: Session, item: ItemResult) -> ItemResult:
    # Scores carried over from the stored run cost this run nothing: they count as reused (cached).
    kept = {name: ev.model_copy(update={"cached": True, "judge_calls": 0})
            for name, ev in item.evaluations.items() if name not in session.plan.scored}
    item = item.model_copy(update={"evaluations": kept}, deep=True)
    session.output_sink(item)
    return await score(session, item)


async def execute(plan: RunPlan, observer: Observer | None = None, *,
                  outputs: Sequence[ItemResult] | None = None,
                  resume: Sequence[ItemResult] | None = None) -> ExperimentReport:
    """The library path: each item goes agent -> evaluators as soon as it can; rows stream to the store.

    With `outputs` (another run's items) the agent is not called: only the evaluators run, as a new
    run. With `resume` (this run's stored items, after a crash or Ctrl-C) only what is missing runs:
    items without an output go through agent and evaluators, outputs without every score are scored.
    """
    start_run(plan)
    if observer:
        observer.on_start(plan)
    done, unscored, missing = _resume_split(plan, resume or [])
    items: list[ItemResult] = list(done)
    started = time.perf_counter()
    status: Literal["completed", "incomplete"] = "incomplete"
    try:
        if outputs is not None:
            stored = sorted(outputs, key=lambda o: (o.index, o.run_index))
            await stream(plan, stored, rescore_step, tables=("outputs", "scores"), observer=observer, into=items)
        else:
            if unscored:
                plan.store.delete_items(plan.run_id, "scores", [(i.index, i.run_index) for i in unscored])
                await stream(plan, unscored, rescore_step, tables=("scores",), observer=observer, into=items)
            await stream(plan, missing, full_step, tables=("outputs", "scores"), observer=observer, into=items)
        status = "completed"
    finally:
        report = finish(plan, items, plan.prior_duration_ms + (time.perf_counter() - started) * 1000, status)
        plan.experiment.last_report = report
    if observer:
        observer.on_finish(report)
    return report


def _resume_split(plan: RunPlan, stored: Sequence[ItemResult]) -> tuple[
        list[ItemResult], list[ItemResult], list[tuple[int, int]]]:
    """Stored items that are complete, stored ok outputs lacking a score, and keys never run."""
    wanted = {e.name for e in plan.evaluators}
    by_key = {(i.index, i.run_index): i for i in stored}
    done = [i for i in by_key.values() if i.status != "ok" or wanted <= set(i.evaluations)]
    unscored = [i for i in by_key.values() if i.status == "ok" and not wanted <= set(i.evaluations)]
    missing = [key for key in item_keys(plan) if key not in by_key]
    return done, unscored, missing


def finish(plan: RunPlan, items: list[ItemResult], duration_ms: float,
           status: Literal["completed", "incomplete"]) -> ExperimentReport:
    """Stages 3 and 4 and the final write: aggregates, verdicts, results JSON, run row."""
    report = build_report(plan, items, duration_ms, status)
    try:
        save(plan, report)
    except Exception as exc:
        if status == "completed":
            raise
        # Already failing: keep the original error, but say where the results could not go.
        print(f"cobalt: could not save the interrupted run {plan.run_id}: {exc}", file=sys.stderr)
    return report
