"""Quality gates over a run's aggregates: thresholds, no-regression against a baseline, custom checks."""

from __future__ import annotations

import abc
import difflib
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from .. import _numbers as numbers
from .._errors import ConfigError
from ..config._config import Config
from ..results._direction import lower_is_better, meets
from ..results._evaluation_identity import EvaluationIdentity, identity_changes, measurement_changes, refusal
from ..results._report import (
    BASELINE_IDENTITY_KEY,
    BASELINE_ITEMS_KEY,
    STAT_NAMES,
    AssertionResult,
    ExperimentReport,
    split_path,
)

RUN_METRICS = ("latency", "cost", "tokens")


def check_metric(path: str, known: Iterable[str], where: str) -> None:
    """Raise before the run if `path` names no metric the experiment produces."""
    name, _ = split_path(path)
    names = list(known)
    base, dot, stat = path.rpartition(".")
    if name not in names and dot and base in names:
        raise ConfigError(f"{where} asks for statistic {stat!r} of {base!r}, which does not exist; "
                          f"use one of {', '.join(sorted(STAT_NAMES))}.")
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known metrics: {', '.join(names)}."
        raise ConfigError(f"{where} refers to metric {path!r}, which this experiment does not produce; {hint}")


def check_evaluator(name: str, known: Iterable[str], where: str) -> None:
    """Raise before the run if `name` is none of the experiment's evaluators."""
    names = list(known)
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"its evaluators: {', '.join(names) or 'none'}."
        raise ConfigError(f"{where} names evaluator {name!r}, which this experiment does not have; {hint}")


G = TypeVar("G", bound="Assertion")


class Assertion(abc.ABC):
    """A quality gate. Subclasses set `name` and implement `evaluate`."""

    name: str = "assertion"
    #: The one variant this gate applies to (`threshold(..., variant="v2")`); None: every variant's run.
    variant: str | None = None

    def metrics(self, config: Config) -> list[str]:
        return []

    def evaluator_names(self) -> list[str]:
        """The experiment's evaluators the gate names (checked, as `metrics` are, when the run is planned)."""
        return []

    def applies_to(self, variant: str | None) -> bool:
        """Whether the gate judges the run of `variant` (None: a run of an experiment without variants)."""
        return self.variant is None or self.variant == variant

    @abc.abstractmethod
    def evaluate(self, report: ExperimentReport, config: Config) -> list[AssertionResult]: ...

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "type": type(self).__name__}


class Threshold(Assertion):
    def __init__(self, path: str, value: float, *, lower_is_better_: bool | None = None) -> None:
        self.path = path
        self.value = float(value)
        self.lower = lower_is_better(path) if lower_is_better_ is None else lower_is_better_
        self.name = f"{path} {'<=' if self.lower else '>='} {numbers.threshold(value)}"

    def metrics(self, config: Config) -> list[str]:
        return [self.path]

    def evaluate(self, report: ExperimentReport, config: Config) -> list[AssertionResult]:
        actual = report.metric(self.path)
        if actual is None:
            why = "no item reported it" if split_path(self.path)[0] in RUN_METRICS else "no successful scores"
            return [AssertionResult(name=self.name, passed=False, expected=self.value,
                                    message=f"{self.path} has no value in this run ({why})")]
        passed = meets(actual, self.value, lower=self.lower)
        verb = "at most" if self.lower else "at least"
        return [AssertionResult(name=self.name, passed=passed, actual=actual, expected=self.value,
                                message=f"{self.path} = {self._shown(actual)}, must be {verb} "
                                        f"{self._shown(self.value, limit=True)}")]

    def _shown(self, value: float, *, limit: bool = False) -> str:
        """A latency or a cost with its unit; a score in the digits that tell it from the threshold
        (`0.7995`, never a rounded `0.800` under a limit of 0.8), the threshold as written."""
        if split_path(self.path)[0] in ("latency", "cost"):
            return numbers.metric(self.path, value)
        return numbers.threshold(value) if limit else numbers.distinct(value, self.value)[0]

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "type": "threshold", "path": self.path, "value": self.value,
                "direction": "max" if self.lower else "min", **({"variant": self.variant} if self.variant else {})}


class NoRegression(Assertion):
    def __init__(self, baseline: str | Path, tolerance: float = 0.05, *,
                 accept_identity_change: bool = False) -> None:
        if not 0 <= tolerance < 1:
            raise ConfigError(f"no_regression(tolerance={tolerance}) must be within 0..1 (0.05 means 5%).")
        self.baseline = Path(baseline)
        self.tolerance = tolerance
        #: Compare with a baseline measured differently (another judge prompt, dataset...) all the same.
        self.accept_identity_change = accept_identity_change
        self.name = f"no regression vs {self.baseline.name}"

    def path(self, config: Config) -> Path:
        """The baseline file: a relative path is under the project root."""
        return self.baseline if self.baseline.is_absolute() else config.root / self.baseline

    def _load(self, config: Config) -> dict[str, float]:
        return self._read(config)[0]

    def _read(self, config: Config) -> tuple[dict[str, float], EvaluationIdentity | None, list[str] | None]:
        """The baseline's `{metric: value}`, and the identity and item identities of the run it was written
        from (None when the file does not say)."""
        path = self.path(config)
        if not path.is_file():
            raise ConfigError(f"Baseline {path} does not exist; write it from a good run with `cobalt export RUN "
                              f"--format baseline -o {self.baseline}` or `cobalt run --update-baselines`, or "
                              f"in Python with report.save_baseline({str(self.baseline)!r}).")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ConfigError(f"Baseline {path} is not valid JSON ({exc}).") from None
        identity = data.pop(BASELINE_IDENTITY_KEY, None) if isinstance(data, dict) else None
        items = data.pop(BASELINE_ITEMS_KEY, None) if isinstance(data, dict) else None
        if items is not None and not (isinstance(items, list) and all(isinstance(i, str) for i in items)):
            raise ConfigError(f"Baseline {path} has a damaged {BASELINE_ITEMS_KEY!r} (a list of item ids); write it "
                              "again from a good run with `cobalt run --update-baselines`.")
        if not isinstance(data, dict) or not all(isinstance(v, int | float) for v in data.values()):
            raise ConfigError(f"Baseline {path} must be a JSON object of metric name to number.")
        if not data:
            raise ConfigError(f"Baseline {path} is empty, so it would gate nothing; write it from a completed "
                              "run with `cobalt run --update-baselines` or `cobalt export RUN -f baseline`.")
        try:
            measured = None if identity is None else EvaluationIdentity.model_validate(identity)
        except ValueError:
            raise ConfigError(f"Baseline {path} has a damaged {BASELINE_IDENTITY_KEY!r}; write it again from a "
                              "good run with `cobalt run --update-baselines`.") from None
        return {str(k): float(v) for k, v in data.items()}, measured, items

    def metrics(self, config: Config) -> list[str]:
        return list(self._load(config))

    def measured_with(self, config: Config) -> EvaluationIdentity | None:
        """The identity of the run the baseline file was written from; None when the file is missing,
        unreadable or older than identities."""
        try:
            return self._read(config)[1]
        except ConfigError:
            return None

    def evaluate(self, report: ExperimentReport, config: Config) -> list[AssertionResult]:
        values, measured, items = self._read(config)
        results = self._identity_check(measured, report)
        if items is not None and (measured is None or report.identity is None
                                  or measured.dataset != report.identity.dataset):
            results += self._missing_check(items, report)  # the same dataset holds the same items: no read
        for metric, base in sorted(values.items()):
            actual = report.metric(metric)
            lower = lower_is_better(metric)
            limit = base * (1 + self.tolerance) if lower else base * (1 - self.tolerance)
            passed = actual is not None and meets(actual, limit, lower=lower)
            results.append(AssertionResult(name=f"no_regression:{metric}", passed=passed, actual=actual,
                                           expected=limit, message=self._message(metric, actual, base, limit)))
        return results

    def _identity_check(self, measured: EvaluationIdentity | None, report: ExperimentReport) -> list[AssertionResult]:
        """A failed verdict when the baseline was measured differently from this run (unless accepted);
        an accepted or harmless difference is said in a passed one. None when both measured alike or the
        baseline file predates identities."""
        if measured is None or report.identity is None:
            return []
        changes = identity_changes(measured, report.identity)
        blocking = measurement_changes(changes)
        if not blocking:
            return []
        if self.accept_identity_change:
            said = "; ".join(c.text for c in blocking)
            return [AssertionResult(name="no_regression:identity", passed=True,
                                    message=f"accepted (accept_identity_change=True): {said}")]
        accept = (f"rewrite {self.baseline} from a good run of this setup with `cobalt run --update-baselines`, "
                  "or pass no_regression(..., accept_identity_change=True)")
        return [AssertionResult(name="no_regression:identity", passed=False, message=refusal(changes, accept))]

    def _missing_check(self, items: list[str], report: ExperimentReport) -> list[AssertionResult]:
        """A failed verdict naming the baseline's items this run lacks (passed, saying so, when accepted)."""
        present = set(report.item_ids())
        missing = [i for i in items if i not in present]
        if not missing:
            return []
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        noun = "item of the baseline is" if len(missing) == 1 else "items of the baseline are"
        said = f"{len(missing)} {noun} missing from this run: {shown}"
        if self.accept_identity_change:
            return [AssertionResult(name="no_regression:items", passed=True,
                                    message=f"accepted (accept_identity_change=True): {said}")]
        return [AssertionResult(name="no_regression:items", passed=False,
                                message=f"{said}; its means are over other items (rewrite {self.baseline} with "
                                        "`cobalt run --update-baselines`, or pass no_regression(..., "
                                        "accept_identity_change=True))")]

    def _message(self, metric: str, actual: float | None, base: float, limit: float) -> str:
        """The rule with its numbers: `relevance 0.70 < 0.76 = baseline 0.80 x (1 - 0.05)`, `latency 1.1s > 1.05s
        = baseline 1s x (1 + 0.05)` (a latency or a cost with its unit)."""
        lower = lower_is_better(metric)
        tolerance = numbers.threshold(self.tolerance)

        def shown(value: float) -> str:
            return numbers.metric(metric, value) if metric.split(".")[0] in ("latency", "cost") else _num(value)

        rule = f"{shown(limit)} = baseline {shown(base)} x (1 {'+' if lower else '-'} {tolerance})"
        if actual is None:
            return f"{metric} has no value in this run; the limit was {rule}"
        passed = meets(actual, limit, lower=lower)
        op = ("<=" if passed else ">") if lower else (">=" if passed else "<")
        verdict = "within" if passed else "beyond"
        return f"{metric} {shown(actual)} {op} {rule}: {verdict} the {numbers.percent(self.tolerance)} tolerance"

    def update(self, report: ExperimentReport, config: Config) -> Path:
        """Rewrite the baseline from `report`: every evaluator's mean, plus the run metrics (latency,
        cost, tokens) the old file already held."""
        try:
            kept = [m for m in self._load(config) if m in RUN_METRICS]
        except ConfigError:  # missing or unreadable: this run makes a fresh one
            kept = []
        return report.save_baseline(self.path(config), metrics=kept)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "type": "no_regression", "baseline": str(self.baseline),
                "tolerance": self.tolerance,
                **({"accept_identity_change": True} if self.accept_identity_change else {})}


class Custom(Assertion):
    def __init__(self, name: str, check: Callable[[Mapping[str, Any], Mapping[str, Any]], Any],
                 message: str = "") -> None:
        if not callable(check):
            raise ConfigError(f"assertion({name!r}): check must be a callable (aggregated, stats) -> bool.")
        self.name = name
        self.check = check
        self.message = message

    def evaluate(self, report: ExperimentReport, config: Config) -> list[AssertionResult]:
        aggregated = {n: _stats_dict(s) for n, s in {**report.summary.metrics, **report.summary.scores}.items()}
        s = report.summary
        stats = {"total": s.total_runs, "duration_ms": s.total_duration_ms, "cost": s.estimated_cost,
                 "errors": s.errors + s.timeouts}
        try:
            passed = bool(self.check(aggregated, stats))
            message = self.message or ("passed" if passed else "failed")
        except Exception as exc:
            passed, message = False, f"the check raised {type(exc).__name__}: {exc}"
        return [AssertionResult(name=self.name, passed=passed, message=message)]


class ErrorRate(Assertion):
    """Errors over attempts. Errors: failed and timed-out agent calls, eval-errors, and items whose `id`
    repeats an earlier item's; attempts: the agent calls made plus the evaluations attempted (one per
    evaluator on each ok output). Every experiment has this gate, at `[ci] max_error_rate` (default 0)
    or the experiment's own `max_error_rate`."""

    def __init__(self, max_rate: float) -> None:
        if isinstance(max_rate, bool) or not isinstance(max_rate, int | float) or not 0 <= max_rate <= 1:
            raise ConfigError(f"max_error_rate={max_rate!r} must be a share of attempts within 0..1 (0.05 means "
                              "5%; 0, the default, lets no error pass).")
        self.max_rate = float(max_rate)
        self.name = f"error rate <= {numbers.percent(max_rate)}"

    def evaluate(self, report: ExperimentReport, config: Config) -> list[AssertionResult]:
        s = report.summary
        agent_errors = s.errors + s.timeouts
        evaluated = eval_errors = 0  # counted in one pass: a run's own report reads its items back from disk
        ids: set[str] = set()
        repeated: list[str] = []
        for item in report.items:
            if item.status == "ok":
                evaluated += len(item.evaluations)
                eval_errors += sum(ev.status != "ok" for ev in item.evaluations.values())
            identity = item.item.get("id") if item.run_index == 0 and isinstance(item.item, dict) else None
            if identity is not None:
                key = json.dumps(identity, sort_keys=True, default=str)
                if key in ids:
                    repeated.append(key)
                ids.add(key)
        attempts = s.total_runs + evaluated
        errors = agent_errors + eval_errors + len(repeated)
        rate = errors / attempts if attempts else 0.0
        passed = meets(rate, self.max_rate, lower=True)
        message = (f"error rate {numbers.percent(rate)} ({errors} of {attempts} attempts): {agent_errors} of "
                   f"{s.total_runs} agent calls failed or timed out, {eval_errors} of {evaluated} "
                   "evaluations were eval-errors")
        if repeated:
            shown = ", ".join(dict.fromkeys(repeated[:3]))
            message += (f", {len(repeated)} item{'s' if len(repeated) > 1 else ''} repeated an earlier item's id "
                        f"({shown}{', ...' if len(repeated) > 3 else ''})")
        return [AssertionResult(name=self.name, passed=passed, actual=rate, expected=self.max_rate, message=message)]

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "type": "error_rate", "max_rate": self.max_rate}


class EvaluatorsScored(Assertion):
    """Every evaluator scored at least one of the outputs it was given. Every experiment has this gate,
    whatever else is declared: a judge that is down, answers that are never JSON or an evaluator that
    always raises leave a run with no evaluation, and such a run must not pass."""

    name = "every evaluator scored"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "type": "evaluators_scored"}

    def evaluate(self, report: ExperimentReport, config: Config) -> list[AssertionResult]:
        counted = getattr(report.items, "scored_counts", None)  # a run's own items, on disk, carry them
        if counted is not None and report.summary.ok and all(scored for _, scored in counted.values()):
            # The run counted them as its items finished: a pass needs no read of the items.
            names = list(dict.fromkeys([*report.summary.scores, *counted]))
            counts = [f"{name} {counted.get(name, (0, 0))[1]}/{counted.get(name, (0, 0))[0]}" for name in names]
            return [AssertionResult(name=self.name, passed=True, message="scored: " + (
                ", ".join(counts) if counts else "the experiment has no evaluators"))]
        # One pass, keeping counts only: a run's own report reads its items back from disk.
        seen: dict[str, None] = {}
        given: dict[str, int] = {}
        scored: dict[str, int] = {}
        first_error: dict[str, str] = {}
        ok = 0
        for item in report.items:
            seen.update(dict.fromkeys(item.evaluations))
            if item.status != "ok":
                continue
            ok += 1
            for name, ev in item.evaluations.items():
                given[name] = given.get(name, 0) + 1
                scored[name] = scored.get(name, 0) + (ev.status == "ok" and ev.score is not None)
                if ev.error and name not in first_error:
                    first_error[name] = ev.error
        names = list(dict.fromkeys([*report.summary.scores, *seen]))
        if names and not ok:  # one line, not one per evaluator: it is the agent that failed
            why = (f"no agent call succeeded ({len(report.items)} of {len(report.items)} failed or timed out)"
                   if report.items else "no item finished")
            return [AssertionResult(name=self.name, passed=False, actual=0.0,
                                    message=f"{why}, so no evaluator scored anything")]
        counts, failures = [], []
        for name in names:
            n_given, n_scored = given.get(name, 0), scored.get(name, 0)
            counts.append(f"{name} {n_scored}/{n_given}")
            if n_given and not n_scored:
                first = first_error.get(name) or "no score"
                failures.append(AssertionResult(
                    name=f"scored:{name}", passed=False, actual=0.0,
                    message=f"evaluator {name!r} scored none of the {n_given} items: {_first_line(first)}"))
        return failures or [AssertionResult(name=self.name, passed=True, message="scored: " + (
            ", ".join(counts) if counts else "the experiment has no evaluators"))]


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else text
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _num(value: float) -> str:
    """Two decimals where they say it all (`0.70`), else three significant digits (`0.760`, `0.0000420`)."""
    if 0.1 <= abs(value) < 1000 and round(value, 2) == round(value, 6):
        return numbers.fixed(value, 2)
    return numbers.number(value)


def _stats_dict(stats: Any) -> dict[str, Any]:
    data = stats.model_dump()
    data["mean"] = data["avg"]
    return data


def threshold(path: str, value: float, *, variant: str | None = None) -> Threshold:
    """Pass when the metric at `path` (`relevance`, `relevance.p95`, `latency.p99`) reaches `value`.

    Metrics named `latency*`, `cost*`, `tokens*`, `*Duration`, `*Latency` must stay at or below it.
    In an experiment with variants it judges every variant's run, or only the run of `variant`.
    """
    gate = Threshold(path, value)
    return on_variant(gate, variant)


def no_regression(baseline: str | Path, tolerance: float = 0.05, *,
                  accept_identity_change: bool = False) -> NoRegression:
    """Fail when any metric in the baseline file (from `report.save_baseline`) worsens by more than `tolerance`.

    The file also records what its run measured with (dataset, evaluators' prompts, options and judge
    models); a run measured differently fails the gate, naming what changed, unless
    `accept_identity_change=True`.
    """
    return NoRegression(baseline, tolerance, accept_identity_change=accept_identity_change)


def assertion(name: str, check: Callable[[Mapping[str, Any], Mapping[str, Any]], Any],
              message: str = "", *, variant: str | None = None) -> Custom:
    """A custom gate: `check(aggregated, stats)` returns True to pass (only on the run of `variant`, if named)."""
    return on_variant(Custom(name, check, message), variant)


def _variant_name(variant: str | None, gate: str) -> str | None:
    if variant is not None and (not isinstance(variant, str) or not variant):
        raise ConfigError(f"gate {gate!r}: variant must be a variant's name, got {variant!r}.")
    return variant


def on_variant(gate: G, variant: str | None) -> G:
    """`gate`, named for the one variant it judges (`relevance >= 0.8 [gpt-4o]`)."""
    gate.variant = _variant_name(variant, gate.name)
    if variant is not None:
        gate.name = f"{gate.name} [{variant}]"
    return gate


def experiment_gates(config: Config, assertions: Iterable[Assertion], evaluators: Iterable[str], *,
                     max_error_rate: float | None = None) -> list[Assertion]:
    """An experiment's own gates, plus the `[ci]` ones that apply to it (a project-wide threshold
    applies to the experiments that produce its metric), plus the two every experiment has: the error
    rate (the experiment's `max_error_rate`, else `[ci]`'s, default 0) and `EvaluatorsScored`."""
    known = {*evaluators, *RUN_METRICS}
    shared = [g for g in config_assertions(config) if all(split_path(m)[0] in known for m in g.metrics(config))]
    if max_error_rate is not None:
        shared = [g for g in shared if not isinstance(g, ErrorRate)] + [ErrorRate(max_error_rate)]
    return [*assertions, *shared, EvaluatorsScored()]


def config_assertions(config: Config) -> list[Assertion]:
    """The gates that `[ci]` in config adds to every experiment."""
    gates: list[Assertion] = []
    for path, bound in config.ci.thresholds.items():
        if bound.min is not None:
            gates.append(Threshold(path, bound.min, lower_is_better_=False))
        if bound.max is not None:
            gates.append(Threshold(path, bound.max, lower_is_better_=True))
    gates.append(ErrorRate(config.ci.max_error_rate))
    return gates
