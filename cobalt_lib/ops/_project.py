"""The project: what its configuration warns about, and run requests for the `cobalt serve` daemon."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from .._errors import ConfigError
from ..config._config import Config
from ..experiments._discovery import load_experiments
from ..run import local_instance_exists, write_run_request


def config_warnings(config: Config) -> list[str]:
    """A warning per config file that the one in use shadows: a silently ignored file is a setting
    the user thinks applies."""
    return [f"{other} is ignored: {config.source} comes first and is the configuration used; merge the two "
            "files into one." for other in config.shadowed]


class RunRequested(BaseModel):
    """A run asked of the daemon: the request file it will pick up."""

    experiment: str
    run_id: str
    path: str
    #: Whether a `cobalt serve` daemon is running to pick it up now (else it waits for one).
    daemon_running: bool
    warnings: list[str] = Field(default_factory=list)


def request_experiment(config: Config, experiment: str, *, concurrency: int | None = None,
                       add_tags: Sequence[str] = ()) -> RunRequested:
    """Ask the running dashboard's daemon for a run of `experiment` (a file its sensor picks up)."""
    names = [e.name for e in load_experiments(config, problems=[])]
    if experiment not in names:
        raise ConfigError(f"No experiment named {experiment!r}; known: {', '.join(names) or 'none'}.")
    options: dict[str, Any] = {"concurrency": concurrency} if concurrency else {}
    if add_tags:
        options["tags"] = list(add_tags)
    path = write_run_request(config, experiment, **options)
    running = _daemon_running(config)
    warnings = [] if running else ["no `cobalt serve` daemon is running for this project, so the request waits "
                                   "until `cobalt serve` runs."]
    return RunRequested(experiment=experiment, run_id=path.stem, path=str(path), daemon_running=running,
                        warnings=warnings)


def _daemon_running(config: Config) -> bool:
    # No instance, no daemon: asked before importing cobalt_dagster, so a request to a project that never
    # ran `cobalt serve` imports no Dagster.
    if not local_instance_exists(config):
        return False
    from cobalt_dagster import daemon_running

    return daemon_running(config)
