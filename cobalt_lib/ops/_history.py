"""Past runs as history entries: newest first, with their evaluator means, duration and cost."""

from __future__ import annotations

import difflib
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from .._errors import ConfigError
from ..config._config import Config
from ..store._store import Store
from ..store._store_history import RunSelection


class HistoryEntry(BaseModel):
    """One stored run as `cobalt history` lists it (and `--json` prints it)."""

    run_id: str
    experiment: str
    date: str | None = None
    tags: list[str] = Field(default_factory=list)
    status: str
    passed: bool | None = None
    #: Each evaluator's mean score.
    scores: dict[str, float | None] = Field(default_factory=dict)
    duration_ms: float | None = None
    cost: float | None = None
    agent_cost: float | None = None
    judge_cost: float | None = None
    parent_run_id: str | None = None
    #: The variant this run is, and its run group (docs/variants.md); None for a run without variants.
    variant: str | None = None
    group_id: str | None = None
    #: Finished items still in an ended process's journal while the store is held (`Store` rows' `waiting`).
    waiting: int | None = None

    @property
    def verdict(self) -> str:
        """`passed` or `FAILED` for a completed run whose gates were judged, else its status."""
        if self.status != "completed":
            return self.status
        if self.passed is None:
            return "completed"
        return "passed" if self.passed else "FAILED"


def run_history(config: Config, *, experiment: str | None = None, tag: str | None = None,
                limit: int = 20) -> list[HistoryEntry]:
    """The newest `limit` runs (of `experiment`, tagged `tag`), newest first; none in an empty project."""
    if limit < 1:
        raise ConfigError(f"--limit must be 1 or more, got {limit}.")
    store = Store.for_config(config)
    with store.reading():  # the view's three reads over one connection
        check_stored_experiment(store, experiment)
        runs = store.run_page(RunSelection(experiment=experiment, tag=tag), limit=limit)
        means = store.evaluator_means([r["run_id"] for r in runs])
    return [history_entry(r, means.get(r["run_id"], {})) for r in runs]


def run_duration_ms(run: dict[str, Any]) -> float | None:
    """The run's working time: its summary's once finished, else what its stages have stored so far,
    else (a run from before working time was stored) the wall time from start to finish."""
    for value in ((run.get("summary") or {}).get("total_duration_ms"), run.get("worked_ms")):
        if isinstance(value, int | float) and value > 0:  # 0 is the default of a summary never filled in
            return float(value)
    started, finished = run.get("started_at"), run.get("finished_at")
    if isinstance(started, datetime) and isinstance(finished, datetime):
        return (finished - started).total_seconds() * 1000
    return None


def history_entry(run: dict[str, Any], means: dict[str, float | None]) -> HistoryEntry:
    """A `runs` row (with its evaluator means) as a history entry."""
    started = run.get("started_at")
    summary = run.get("summary") or {}
    return HistoryEntry(
        run_id=run["run_id"], experiment=run["experiment"],
        date=started.isoformat() if isinstance(started, datetime) else started,
        tags=run.get("tags") or [], status=run["status"], passed=_passed(run),
        scores=means, duration_ms=run_duration_ms(run), cost=summary.get("estimated_cost"),
        agent_cost=summary.get("agent_cost"), judge_cost=summary.get("judge_cost"),
        parent_run_id=run.get("parent_run_id"), variant=run.get("variant"), group_id=run.get("group_id"),
        waiting=(run.get("waiting") or {}).get("items") or None,
    )


def _passed(run: dict[str, Any]) -> bool | None:
    """The gates' verdict of a completed run; never True for another (a row from before that rule may
    say so): False for an incomplete or failed run, None while it runs."""
    if run["status"] == "completed":
        return run.get("passed")
    return None if run["status"] == "running" else False


def check_stored_experiment(store: Store, experiment: str | None) -> None:
    """ConfigError when the store has runs but none of `experiment`: the name is more likely mistyped
    than never run, and an exit 0 with nothing listed would hide the typo from a script."""
    if experiment is None:
        return
    known = store.experiment_names()
    if not known or experiment in known:  # an empty store (no run of anything yet) is reported as such
        return
    close = difflib.get_close_matches(experiment, known, n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? (stored experiments: " if close else "stored experiments: "
    raise ConfigError(f"No runs of experiment {experiment!r} are stored; {hint}{', '.join(known)}"
                      + (")" if close else "."))
