"""Run references as users type them (`latest`, `previous`, an id or a unique prefix), resolved."""

from __future__ import annotations

from pydantic import BaseModel

from .._errors import ConfigError
from ..config._config import Config
from ..store._history import resolve_run
from ..store._store import Store

#: Run references that depend on which experiment's runs they are looked up in.
RELATIVE = ("latest", "previous")


class RunRef(BaseModel):
    """A stored run, by id, with the experiment it belongs to."""

    run_id: str
    experiment: str


class RunPair(BaseModel):
    """Two runs to compare: `a` the baseline, `b` the run compared with it."""

    a: RunRef
    b: RunRef
    #: The experiment `latest`/`previous` were looked up in when the caller named none (else None).
    scope: str | None = None


def store_with_runs(config: Config, what: str = "stored runs") -> Store:
    """The project's store, which must hold a run: else an error saying to run one (`what` there are none of)."""
    store = Store.for_config(config)
    if not store.runs(missing_ok=True):
        raise ConfigError(f"There are no {what} yet; run `cobalt run` first (store: {store.where}).")
    return store


def resolve_ref(config: Config, ref: str, experiment: str | None = None) -> RunRef:
    """The run `ref` names, `latest` and `previous` among `experiment`'s runs (default: every run)."""
    store = Store.for_config(config)
    run_id = resolve_run(store, ref, experiment)
    return RunRef(run_id=run_id, experiment=store.experiment_of(run_id))


def resolve_pair(config: Config, refs: tuple[str, str], experiment: str | None = None) -> RunPair:
    """The two runs `refs` name, and the experiment `latest`/`previous` were scoped to when the caller
    named none.

    Without `experiment`, `latest` alone would be the newest run of *any* experiment, and comparing
    two experiments pairs unrelated items; so they look in the experiment of the run named outright
    beside them, else of the newest run.
    """
    store = Store.for_config(config)
    ids, scope = pair_ids(store, refs, experiment)
    a, b = (RunRef(run_id=run_id, experiment=store.experiment_of(run_id)) for run_id in ids)
    return RunPair(a=a, b=b, scope=scope)


def pair_ids(store: Store, refs: tuple[str, str], experiment: str | None) -> tuple[list[str], str | None]:
    """`resolve_pair` in `store`, as the two run ids and the scope chosen."""
    if experiment or not any(ref in RELATIVE for ref in refs):
        return [resolve_run(store, ref, experiment) for ref in refs], None
    named = [resolve_run(store, ref) for ref in refs if ref not in RELATIVE]
    anchor = named[0] if named else str(store.runs(missing_ok=True)[0]["run_id"])
    scope = store.experiment_of(anchor)
    stored = len(store.runs(scope, missing_ok=True))
    if "previous" in refs and stored < 2:
        whose = f"run {anchor}'s" if named else "the newest run's"
        raise ConfigError(f"Experiment {scope!r} ({whose}) has {stored} run, so no previous one; pass "
                          "--experiment NAME to compare another experiment's runs, or give two run ids.")
    return [resolve_run(store, ref, scope if ref in RELATIVE else None) for ref in refs], scope
