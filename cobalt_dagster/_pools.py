"""The Dagster concurrency pool a shard claims: one per judge provider, so the LLM calls of every run's
shards to one provider are bounded across runs (`dagster instance concurrency set cobalt/openai 4`).

A pool is claimed per step, not per call: with a limit of N, at most N shards call the provider at
once, each with its own concurrency (`concurrency`, `judge_concurrency`). A step has one pool, so an
experiment whose evaluators use several providers claims the first in name order; one without a
judge claims none. The provider is read from the evaluators' settings, not resolved: loading the
definitions never needs an API key.
"""

from __future__ import annotations

from cobalt_lib import Config, Experiment
from cobalt_lib.evaluators import Evaluator

#: Every cobalt pool's name starts with this; the provider follows (`cobalt/openai`).
POOL_PREFIX = "cobalt/"


def judge_providers(experiment: Experiment, config: Config) -> list[str]:
    """The providers the experiment's model-judged evaluators call, in name order."""
    return sorted({_provider(e, config) for e in experiment.evaluators if e.calls_model})


def judge_pool(experiment: Experiment, config: Config) -> str | None:
    """The pool of the experiment's `run_shard` step (None: it calls no judge)."""
    providers = judge_providers(experiment, config)
    return POOL_PREFIX + providers[0] if providers else None


def _provider(evaluator: Evaluator, config: Config) -> str:
    return str(getattr(evaluator.kind, "provider", None) or config.judge.provider)
