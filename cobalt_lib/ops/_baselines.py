"""Choosing runs by tag: the runs a CI job made, and each one's baseline (the newest passing run of the base branch).

A baseline is a run that completed and passed every gate: a run that failed a gate, was interrupted
or is still going is never chosen, so a bad run on the base branch cannot become the yardstick.
"""

from __future__ import annotations

from typing import Any

from .._errors import ConfigError
from ..store._history import resolve_run
from ..store._store import Store


def tagged_runs(store: Store, tag: str) -> list[dict[str, Any]]:
    """The newest run of each experiment carrying `tag`, in the order the experiments first ran."""
    newest: dict[str, dict[str, Any]] = {}
    for run in store.runs(missing_ok=True):  # newest first
        if tag in (run.get("tags") or []):
            newest.setdefault(str(run["experiment"]), run)
    return sorted(newest.values(), key=lambda r: str(r["started_at"]))


def named_runs(store: Store, refs: list[str]) -> list[dict[str, Any]]:
    """The runs `refs` name (ids, prefixes, `latest`), each once."""
    ids = list(dict.fromkeys(resolve_run(store, ref) for ref in refs))
    return [store.require_run(run_id) for run_id in ids]


def baseline_run(store: Store, experiment: str, tag: str, *, exclude: set[str]) -> dict[str, Any] | None:
    """The newest run of `experiment` carrying `tag` that completed and passed its gates (none of `exclude`)."""
    for run in store.runs(experiment=experiment, missing_ok=True):
        if (run["run_id"] not in exclude and tag in (run.get("tags") or []) and run["status"] == "completed"
                and run.get("passed")):
            return run
    return None


def check_tag(tag: str, option: str) -> str:
    """A tag given on the command line: not empty."""
    if not tag.strip():
        raise ConfigError(f"{option} is empty; give the tag the runs carry (`cobalt run --add-tag TAG`).")
    return tag
