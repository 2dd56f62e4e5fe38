"""Declaring experiments: `experiment(...)` as a call or a decorator registers; `.run()` executes."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from .._aio import run_anywhere
from .._errors import ConfigError
from ..config._config import Config, load_config
from ..evaluators._evaluator import Evaluator
from ..evaluators._itemchecks import with_item_checks
from ..gates._assertions import RUN_METRICS, Assertion, ErrorRate
from ..results._report import ExperimentReport
from ._dataset import Dataset
from ._variants import Variant, check_gate_variants, parse_variants, select_variants

if TYPE_CHECKING:
    from ..conversations._simulator import SimulatedUser

_OPTIONS = frozenset({"evaluators", "runs", "concurrency", "judge_concurrency", "timeout", "tags", "assertions",
                      "description", "max_error_rate", "simulator", "variants", "baseline"})

#: Every declared experiment by name; declaring a name again replaces it (notebooks re-run cells).
REGISTRY: dict[str, Experiment] = {}

#: Open recordings of declarations (one per experiment file being loaded): unlike REGISTRY, they
#: keep a name declared twice, so loading a file can refuse it.
_RECORDINGS: list[list[Experiment]] = []


class Experiment:
    """A dataset, an agent (any callable taking `ctx`) and evaluators. Nothing runs until `.run()`."""

    def __init__(
        self,
        name: str,
        dataset: Dataset | Iterable[Mapping[str, Any]],
        runner: Callable[..., Any],
        *,
        evaluators: Sequence[Evaluator] = (),
        runs: int = 1,
        concurrency: int | None = None,
        judge_concurrency: int | None = None,
        timeout: float | None = None,
        tags: Sequence[str] = (),
        assertions: Sequence[Assertion] = (),
        description: str | None = None,
        max_error_rate: float | None = None,
        simulator: SimulatedUser | None = None,
        variants: Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Any]] | None = None,
        baseline: str | None = None,
    ) -> None:
        where = f"experiment {name!r}"
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"An experiment needs a non-empty name, got {name!r}.")
        if not isinstance(dataset, Dataset):
            dataset = Dataset(dataset)
        if not callable(runner):
            raise ConfigError(f"{where}: the agent must be a callable taking ctx, got {runner!r}.")
        evaluators = list(evaluators)
        for evaluator in evaluators:
            if not isinstance(evaluator, Evaluator):
                raise ConfigError(f"{where}: evaluators must be Evaluator(...) objects, got {evaluator!r}.")
        evaluators = with_item_checks(evaluators, dataset)  # items carrying "checks": their `checks` evaluator
        names = [e.name for e in evaluators]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError(f"{where}: evaluator names must be unique; {duplicates[0]!r} is used twice.")
        reserved = sorted(set(names) & set(RUN_METRICS))
        if reserved:
            raise ConfigError(f"{where}: evaluator name {reserved[0]!r} is taken by the run metric of that name; "
                              "choose another name.")
        _check_positive(where, integer=True, runs=runs, concurrency=concurrency, judge_concurrency=judge_concurrency)
        _check_positive(where, timeout=timeout)
        if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
            raise ConfigError(f"{where}: tags must be a list of strings, got {tags!r}.")
        for gate in assertions:
            if not isinstance(gate, Assertion):
                raise ConfigError(f"{where}: assertions must come from threshold(), no_regression() or "
                                  f"assertion(), got {gate!r}.")
        if max_error_rate is not None:
            ErrorRate(max_error_rate)  # checks it now, with the sentence that says what it means
        #: The agent's configurations run side by side (`ctx.variant`); empty: the experiment has none.
        self.variants = parse_variants(variants, baseline, where)
        check_gate_variants(assertions, self.variants, where)
        self.name = name
        self.dataset = dataset
        self.runner = runner
        self.evaluators = evaluators
        self.runs = runs
        self.concurrency = concurrency
        self.judge_concurrency = judge_concurrency
        self.timeout = timeout
        self.tags = list(tags)
        self.assertions = list(assertions)
        #: The share of errors this experiment may have and pass; None: `[ci] max_error_rate` (default 0).
        self.max_error_rate = max_error_rate
        if simulator is not None and not _is_simulated_user(simulator):
            raise ConfigError(f"{where}: simulator must be a SimulatedUser(model=..., provider=...), got "
                              f"{simulator!r}.")
        #: Who plays the simulated users of conversation items (None: the judge's model and provider).
        self.simulator = simulator
        self.description = description or (getattr(runner, "__doc__", None) or "").strip() or None
        self.source_file: str | None = None
        self.source_line: int | None = None

    def __repr__(self) -> str:
        return f"Experiment({self.name!r}, {len(self.dataset)} items, {len(self.evaluators)} evaluators)"

    @property
    def baseline_variant(self) -> Variant | None:
        """The variant the others are compared with; None when the experiment has no variants."""
        return next((v for v in self.variants if v.baseline), None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The decorated agent stays callable."""
        return self.runner(*args, **kwargs)

    def run(self, *, config: Config | None = None, observer: Any = None, **overrides: Any) -> ExperimentReport:
        """Run every item through the agent and the evaluators; store and return the report.

        Overrides: `concurrency`, `timeout`, `runs`, `tags`, `run_id`, `indices` (only the dataset items at these
        indices, keeping them), `variant` (in an experiment with variants, the one to run: default its
        baseline; `run_variants()` runs them all). A Ctrl-C keeps what finished
        (the run is stored as `incomplete`) and then raises KeyboardInterrupt; `resume=<run id>`
        then finishes that run, doing only the missing items and scores.
        """
        return run_anywhere(self.arun(config=config, observer=observer, **overrides))

    async def arun(self, *, config: Config | None = None, observer: Any = None, resume: str | None = None,
                   **overrides: Any) -> ExperimentReport:
        """`run()` for code already inside an event loop."""
        from ..run._execute import execute
        from ..run._plan import prepare
        from ..run._requests import FreshRun
        from ..run._resume import resume_request

        config = config or load_config()
        request = FreshRun(**overrides) if resume is None else resume_request(self, config, resume, **overrides)
        return await execute(prepare(self, config, request), observer)


    def run_variants(self, variants: Sequence[str] = (), *, config: Config | None = None, observer: Any = None,
                     **overrides: Any) -> list[ExperimentReport]:
        """Run every variant (or those `variants` names, with the baseline) at once, as `cobalt run` does:
        one run per variant under one run group, sharing the concurrency limit, the judge and its cache.
        Returns their reports, the baseline's first; `cobalt compare --group` shows their grid."""
        from ..run._group import execute_group, new_group_id
        from ..run._plan import prepare
        from ..run._requests import FreshRun

        if not self.variants:
            raise ConfigError(f"experiment {self.name!r} declares no variants; use .run(), or declare variants=[...].")
        config = config or load_config()
        group = new_group_id()
        chosen = select_variants(self.variants, list(variants), f"experiment {self.name!r}")
        plans = [prepare(self, config, FreshRun(**overrides, variant=v.name, group_id=group)) for v in chosen]
        return run_anywhere(execute_group(plans, observer))


def _check_positive(where: str, *, integer: bool = False, **values: float | None) -> None:
    kinds = int if integer else int | float
    for name, value in values.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, kinds) or value <= 0):
            what = "a positive whole number" if integer else "a positive number"
            raise ConfigError(f"{where}: {name} must be {what}, got {value!r}.")


@overload
def experiment(name: str, dataset: Dataset | Iterable[Mapping[str, Any]], runner: Callable[..., Any],
               **options: Any) -> Experiment: ...
@overload
def experiment(name: str, dataset: Dataset | Iterable[Mapping[str, Any]], runner: None = None,
               **options: Any) -> Callable[[Callable[..., Any]], Experiment]: ...
def experiment(name: str, dataset: Dataset | Iterable[Mapping[str, Any]], runner: Callable[..., Any] | None = None,
               **options: Any) -> Experiment | Callable[[Callable[..., Any]], Experiment]:
    """Declare and register an experiment: `experiment(name, dataset, agent, evaluators=[...])`,
    or as a decorator over the agent: `@experiment(name, dataset, evaluators=[...])`.

    Options: `evaluators`, `runs`, `concurrency`, `judge_concurrency`, `timeout` (seconds per
    item), `tags`, `assertions`, `description`, `max_error_rate` (the share of errors that may pass;
    default `[ci] max_error_rate`, 0: any error fails the run), `simulator` (a `SimulatedUser`: the model
    playing conversation items' simulated users; default the judge's), `variants` (parameter sets the agent
    receives as `ctx.variant`: a list, or a mapping of axes for every combination; docs/variants.md)
    and `baseline` (the variant the others are compared with; default the first).
    """
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        close = difflib.get_close_matches(unknown[0], _OPTIONS, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"options are {', '.join(sorted(_OPTIONS))}."
        raise ConfigError(f"experiment {name!r}: unknown option {unknown[0]!r}; {hint}")

    line = sys._getframe(1).f_lineno  # where the user declared it, for "declared twice" errors

    def register(fn: Callable[..., Any]) -> Experiment:
        declared = Experiment(name, dataset, fn, **options)
        declared.source_line = line
        REGISTRY[name] = declared
        for recording in _RECORDINGS:
            recording.append(declared)
        return declared

    return register(runner) if runner is not None else register


def _is_simulated_user(value: object) -> bool:
    """Whether `value` is a `SimulatedUser` (its module loads only for an experiment that declares one)."""
    from ..conversations._simulator import SimulatedUser

    return isinstance(value, SimulatedUser)
