"""Which experiments a command acts on: found in files (or discovered), by name and tag."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from .._errors import ConfigError
from .._testing import pause_point
from ..config._config import Config
from ..experiments._discovery import FilesDidNotLoad, load_experiments, skipped
from ..experiments._experiment import Experiment
from ..gates._assertions import Threshold
from ..run._plan import RunPlan


class Selection(BaseModel):
    """Experiments from `files` (default: discovered under `test_dir`) whose name contains `name_filter`
    and that have one of `tags` (none given: any)."""

    files: list[Path] = Field(default_factory=list)
    name_filter: str | None = None
    tags: list[str] = Field(default_factory=list)


def select_experiments(config: Config, selection: Selection, problems: list[str] | None = None,
                       unloaded: list[str] | None = None) -> list[Experiment]:
    """The selected experiments; selecting nothing is an error that says what was found, so a
    mistyped filter or tag is plain. `problems`: discovered files that did not load, or link out of the
    project, one sentence each (the others still load); with `unloaded`, the files that did not load go
    there instead, for the caller to decide (`cobalt run --ci` stops). When every file failed, that is the error."""
    files, name_filter, tags = selection.files, selection.name_filter, selection.tags
    pause_point("discovery")  # tests: an interrupt while experiment files are imported
    refused: list[str] = []
    broken: list[str] = []
    found = load_experiments(config, files or None, problems=refused, unloaded=broken)
    where = ", ".join(map(str, files)) if files else f"{config.test_dir}/ matching {', '.join(config.test_match)}"
    if not found and broken:
        raise FilesDidNotLoad(broken, where=where)
    seen = refused + ([] if unloaded is not None else [skipped(b) for b in broken])
    if problems is not None:
        problems.extend(seen)
    if unloaded is not None:
        unloaded.extend(broken)
    if not found:
        said = f" ({' '.join(seen)})" if seen else ""
        raise ConfigError(f"No experiments found in {where}{said}; create one with `cobalt init` or pass a file.")
    named = [e for e in found if not name_filter or name_filter in e.name]
    if not named:
        mentioned = seen + (broken if unloaded is not None else [])
        raise ConfigError(f"No experiment name contains {name_filter!r} (--filter); found: "
                          f"{', '.join(sorted({e.name for e in found}))}." + "".join(f" {p}" for p in mentioned))
    chosen = [e for e in named if not tags or set(tags) & set(e.tags)]
    if not chosen:
        known = sorted({t for e in named for t in e.tags})
        raise ConfigError(f"None of the {len(named)} experiments found has the tag {' or '.join(tags)}; "
                          f"their tags: {', '.join(known) or 'none'}.")
    return chosen


def unused_thresholds(config: Config, plans: Sequence[RunPlan]) -> list[str]:
    """A warning per `[ci] thresholds` path that gates none of these runs: no experiment produces
    that metric, so the threshold is a no-op (likely a typo or a missing evaluator)."""
    used = {gate.path for plan in plans for gate in plan.assertions if isinstance(gate, Threshold)}
    return [f"[ci] thresholds {path!r} applies to none of the experiments run (none produces {path!r}); "
            "it gates nothing." for path in config.ci.thresholds if path not in used]


def resume_scope(config: Config, selection: Selection,
                 problems: list[str] | None = None) -> tuple[list[Experiment], str | None]:
    """The experiments a resume may finish a run of, and the one experiment whose runs `latest` and
    `previous` then mean when the name filter or tags pick it (None: every experiment's runs)."""
    if not selection.name_filter and not selection.tags:
        seen = problems if problems is not None else []
        return load_experiments(config, selection.files or None, problems=seen), None
    chosen = select_experiments(config, selection, problems)
    if len(chosen) > 1:
        raise ConfigError(f"--resume finishes one run, but --filter/--tag match {len(chosen)} experiments "
                          f"({', '.join(e.name for e in chosen)}); narrow them to one.")
    return chosen, chosen[0].name
