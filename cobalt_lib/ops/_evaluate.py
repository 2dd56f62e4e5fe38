"""Scoring one output with one evaluator of an experiment, outside any run: nothing is stored.

What an assistant uses to check a fix or a new judge prompt on a single case: the evaluator is the
experiment's own (its kind, options, template, judge endpoint and the project's judge cache), the
item is one of the experiment's dataset items (or one given), and the output is the one to judge.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from .._aio import run_anywhere
from .._errors import ConfigError
from .._threads import DaemonThreads
from ..config._config import Config
from ..evaluators._context import EvalContext
from ..evaluators._evaluator import Evaluator
from ..experiments._discovery import load_experiments
from ..experiments._experiment import Experiment
from ..llm._cache import ResponseCache
from ..llm._judge import Judge
from ..llm._providers import import_sdks
from ..results._report import Evaluation


class Evaluated(BaseModel):
    """One evaluator's verdict on one output, with what it was scored against."""

    experiment: str
    evaluator: str
    type: str
    #: The evaluator's pass mark: a score at or above it passes.
    threshold: float
    #: The dataset index of the item scored against; None when the caller gave the item itself.
    item_index: int | None = None
    item: dict[str, Any] = Field(default_factory=dict)
    output: Any = None
    evaluation: Evaluation


def evaluate_output(config: Config, experiment: str, evaluator: str, output: Any,
                    item: int | dict[str, Any] | None = None, metadata: dict[str, Any] | None = None) -> Evaluated:
    """Score `output` with `experiment`'s evaluator `evaluator`, against dataset item `item` (an index) or
    the item given (a dict); None: an item without fields. Nothing is stored; the judge cache is used."""
    exp = _find_experiment(config, experiment)
    chosen = _find_evaluator(exp, evaluator)
    index, record = _item(exp, item)
    chosen.check_item(record, index if index is not None else 0)
    ctx = EvalContext(item=record, output=output, metadata=metadata or {}, index=index or 0)
    evaluation = run_anywhere(_score(config, exp, chosen, ctx))
    return Evaluated(experiment=exp.name, evaluator=chosen.name, type=chosen.type, threshold=chosen.threshold,
                     item_index=index, item=record, output=output, evaluation=evaluation)


async def _score(config: Config, exp: Experiment, evaluator: Evaluator, ctx: EvalContext) -> Evaluation:
    endpoint = evaluator.endpoint(config)
    import_sdks([endpoint])
    cache = ResponseCache(config.output_path / "cache", config.cache.ttl_seconds, enabled=config.cache.enabled)
    judge = Judge(cache, 1, {name: (p.input, p.output) for name, p in config.prices.items()})
    threads = DaemonThreads(1, name="cobalt-evaluator")
    try:
        return await evaluator.evaluate(ctx, judge, endpoint, threads=threads,
                                        timeout=exp.timeout or config.timeout)
    finally:
        threads.shutdown()
        await judge.aclose()


def _find_experiment(config: Config, name: str) -> Experiment:
    found = load_experiments(config, problems=[])  # a broken file elsewhere does not stop this one
    for exp in found:
        if exp.name == name:
            return exp
    names = ", ".join(sorted(e.name for e in found)) or "none"
    raise ConfigError(f"No experiment is named {name!r}; the project's experiments: {names}.")


def _find_evaluator(exp: Experiment, name: str) -> Evaluator:
    for evaluator in exp.evaluators:
        if evaluator.name == name:
            return evaluator
    names = ", ".join(e.name for e in exp.evaluators) or "none"
    raise ConfigError(f"Experiment {exp.name!r} has no evaluator {name!r}; it has {names}.")


def _item(exp: Experiment, item: int | dict[str, Any] | None) -> tuple[int | None, dict[str, Any]]:
    if item is None:
        return None, {}
    if isinstance(item, dict):
        return None, dict(item)
    if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < len(exp.dataset):
        raise ConfigError(f"item={item!r} is not a dataset index of experiment {exp.name!r}; it has items 0 to "
                          f"{len(exp.dataset) - 1}. Give an index, or the item itself as an object.")
    return item, exp.dataset[item]
