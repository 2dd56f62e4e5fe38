"""Experiments with variants: one plan per variant under one run group, run at once, and the group's grid.

`cobalt run` of an experiment with variants plans every variant (those `--variant` keeps, and always the
baseline), runs them together (`run._group`: one agent limit, one judge and cache) and stores one run per
variant under a run group; `variant_grid` is what the terminal, the pages, the report and MCP show.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from .._aio import run_anywhere
from .._errors import CobaltError, ConfigError
from ..config._config import Config
from ..experiments._experiment import Experiment
from ..experiments._variants import select_variants
from ..results._grid import VariantGrid, build_grid
from ..results._report import ExperimentReport
from ..run._execute import RunInterrupted
from ..run._group import execute_group, new_group_id
from ..run._plan import RunPlan
from ..run._requests import FreshRun
from ..run._session import Observer
from ..store._history import load_report
from ._refs import store_with_runs


def is_group_id(ref: str) -> bool:
    """Whether `ref` names a run group (`g-...`) rather than a run."""
    return ref.startswith("g-")


def variant_plans(experiment: Experiment, request: FreshRun, wanted: Sequence[str],
                  plan: Callable[[FreshRun], RunPlan]) -> list[RunPlan]:
    """One plan per variant of `experiment` that `wanted` keeps (all when empty; the baseline always), all
    in one new run group; a single plan for an experiment without variants."""
    if not experiment.variants:
        return [plan(request)]
    group = new_group_id()
    chosen = select_variants(experiment.variants, wanted, f"experiment {experiment.name!r}")
    return [plan(replace(request, variant=v.name, group_id=group, run_id=None)) for v in chosen]


def check_variant_filter(experiments: Sequence[Experiment], wanted: Sequence[str]) -> None:
    """`--variant` with no selected experiment that declares variants is a usage error, not a silent no-op."""
    if wanted and not any(e.variants for e in experiments):
        names = ", ".join(repr(e.name) for e in experiments) or "none"
        raise ConfigError(f"--variant {wanted[0]!r}: none of the selected experiments ({names}) declares variants; "
                          "declare variants=[...] in the experiment (docs/variants.md) or drop --variant.")


def run_group(plans: Sequence[RunPlan], observer: Observer | None = None) -> list[ExperimentReport]:
    """The plans of one run group at once on the library engine; Ctrl-C is a `RunInterrupted` naming the group
    (`cobalt run --resume GROUP` finishes its runs)."""
    try:
        return run_anywhere(execute_group(plans, observer))
    except KeyboardInterrupt as exc:
        group = plans[0].group_id or plans[0].run_id
        # Ctrl-C may land once every run of the group is stored completed: say so, not that it waits for a
        # --resume that would be refused
        if all(_stored_status(plan) == "completed" for plan in plans):
            raise RunInterrupted(group, "completed") from exc
        if isinstance(exc, RunInterrupted):
            raise
        raise RunInterrupted(group) from exc


def _stored_status(plan: RunPlan) -> str | None:
    try:
        return plan.store.run_status(plan.run_id)
    except CobaltError:  # the store's trouble is said elsewhere; the group reads as interrupted
        return None


def variant_grid(config: Config, ref: str = "latest", *, experiment: str | None = None,
                 quality: str | None = None) -> VariantGrid:
    """The grid of the run group `ref` (its id, a prefix, `latest`, or the id of one of its runs)."""
    store = store_with_runs(config, "run groups")
    group_id = store.resolve_group(ref, experiment)
    reports = [load_report(store, row["run_id"], run=row) for row in store.group_runs(group_id)]
    return build_grid(group_id, reports, quality=quality)
