"""Comparing two stored runs: B against baseline A, with what a careful reader should be told."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .._errors import ConfigError
from ..config._config import Config
from ..render._compare import lost_text, missing_text
from ..results._compare import GRADING_RULE, Comparison, compare_chunks, compare_reports
from ..results._evaluation_identity import refusal
from ..results._report import ExperimentReport
from ..store._history import stored_pair_chunks, streamed_report
from ..store._store import Store
from ._refs import pair_ids, store_with_runs


class CompareOutcome(BaseModel):
    """The comparison, the warnings that go with it, and why it counts as a regression (if it does)."""

    comparison: Comparison
    warnings: list[str] = Field(default_factory=list)
    #: Why `--fail-on-regression` fails: evaluators that regressed, scores lost to errors. Empty: it passes.
    regressions: list[str] = Field(default_factory=list)


def compare_runs(config: Config, run_a: str, run_b: str, *, experiment: str | None = None, top: int = 5,
                 fail_on_regression: bool = False, accept_identity_change: bool = False) -> CompareOutcome:
    """Compare run `run_b` with baseline run `run_a` (run references: an id, a prefix, `latest`, `previous`).

    `experiment` scopes `latest`/`previous` (default: the experiment of the newest run, or of the
    run named beside them). With `fail_on_regression` an unfinished run is refused: a gate must not
    pass on half a run (another CI job's, say). A baseline measured differently (another judge prompt,
    dataset...), or items of it missing from B, count as regressions unless `accept_identity_change`.
    """
    if top < 0:
        raise ConfigError(f"--top must be 0 or more, got {top}.")
    store = store_with_runs(config, "runs to compare")
    ids, scope = pair_ids(store, (run_a, run_b), experiment)
    reports = [streamed_report(store, run_id) for run_id in ids]
    unfinished = [f"{side} ({r.id}) is {r.status}" for side, r in zip("AB", reports, strict=True)
                  if r.status != "completed"]
    if unfinished and fail_on_regression:
        raise ConfigError(f"Run {' and run '.join(unfinished)}; --fail-on-regression compares completed runs "
                          "only: wait for it, or finish it with `cobalt run --resume`.")
    from ..datasets import with_version_diffs

    result = compare_stored(reports[0], reports[1], top=top, store=store)
    result.identity_changes = with_version_diffs(store, reports[0].identity, reports[1].identity,
                                                 result.identity_changes)
    result.scope = scope
    warnings = [f"run {what}: only its finished items are compared." for what in unfinished]
    warnings += _pairing_warnings(result, (run_a, run_b), reports)
    return CompareOutcome(comparison=result, warnings=warnings,
                          regressions=regression_reasons(result, accept_identity_change=accept_identity_change))


def compare_stored(a: ExperimentReport, b: ExperimentReport, *, top: int = 5, store: Store | None = None,
                   ) -> Comparison:
    """`compare_reports`; with `store`, the items paired in the store and streamed in chunks (bounded memory:
    `a` and `b` need no items, `streamed_report`'s). Two grading runs (`cobalt grade`) are judged by agreement
    with the human scores: their mean grades are shown, with no verdict (a better grader can grade lower on
    average)."""
    from ..grading.calibration._compare import (  # the grading wing, for grading runs only
        compare_agreement,
        is_grading_run,
    )

    result = (compare_reports(a, b, top=top) if store is None
              else compare_chunks(a, b, stored_pair_chunks(store, a.id, b.id), top=top))
    if is_grading_run(a) and is_grading_run(b):
        result.agreement = compare_agreement(a, b, resamples=result.resamples, seed=result.seed,
                                             confidence=result.confidence)
        result.regression_rule = GRADING_RULE
        for e in result.evaluators:
            e.verdict = "not comparable"
            e.why = "a mean grade: grading runs are compared by agreement with the human scores (below)"
    return result


def _pairing_warnings(c: Comparison, refs: tuple[str, str], reports: list[ExperimentReport]) -> list[str]:
    warnings = []
    if c.run_a == c.run_b:
        # Not an error: a script's `compare $BASELINE latest` may meet a baseline that is the newest run,
        # and "no change" is then the true answer; but typed by hand it is a slip worth pointing out.
        named = "" if refs[0] == refs[1] else f" ({refs[0]!r} and {refs[1]!r})"
        warnings.append(f"both ids name the same run {c.run_a}{named}; a run compared with itself shows no change.")
    if c.experiment_a != c.experiment_b:
        warnings.append(f"run {c.run_a} is of experiment {c.experiment_a!r} and run {c.run_b} of "
                        f"{c.experiment_b!r}; items are paired by identity (their id, else their content) across "
                        "different experiments.")
    return warnings


#: How to compare a baseline measured differently all the same, said with the refusal.
ACCEPT_FLAG = "--accept-identity-change compares them anyway"


def regression_reasons(c: Comparison, *, accept_identity_change: bool = False,
                       accept: str = ACCEPT_FLAG) -> list[str]:
    """Evaluators whose verdict is `regressed`, and those that scored fewer paired items in B than in A
    because of eval-errors or failed agent calls; unless `accept_identity_change`, a baseline measured
    differently and items of the baseline missing from B. Empty when there is none of these."""
    reasons = [f"regressed: {', '.join(c.regressed)}"] if c.regressed else []
    if c.agreement is not None:
        reasons = [f"agreement with the human scores regressed: {', '.join(c.regressed)}"] if c.regressed else []
    reasons += [f"lost scores: {lost_text(e)}" for e in c.lost_scores]
    if not accept_identity_change:
        if c.measured_differently:
            reasons.append(refusal(c.identity_changes, accept))
        if c.missing_from_b:
            reasons.append(f"{missing_text(c.missing_from_b)} ({accept})")
    return reasons
