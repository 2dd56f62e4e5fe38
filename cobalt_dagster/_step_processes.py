"""How the step processes of a run on Dagster's default executor start: forked from one process that has
imported Dagster and cobalt (multiprocessing's `forkserver`), not each a fresh interpreter (`spawn`,
Dagster's default).

A spawned step imports Dagster and cobalt and loads the definitions before it does anything: about
7 CPU-s a step on this project's 2-core benchmark machine (no bytecode cache), 1.5-3 s with one. A
sharded run of 100,000 items has ten steps; that start-up was half of its CPU (benchmarks/RESULTS.md,
issue 35). The fork server imports them once per orchestrating process (one per run in a deployment:
Dagster's run worker), and each step forks from it.

A fork server keeps the environment it started with, and its steps get that one, not the orchestrating
process's of the moment (a spawned step copies the current one). In a run worker the two are the same;
a process that launches many runs itself (a test session, a notebook calling `execute_job`) and changes
its environment between them gets a new fork server (`fresh_fork_server`, called as the job is built).
(The working directory and `sys.path` are the orchestrating process's either way: multiprocessing sends them.)
"""

from __future__ import annotations

import multiprocessing
import os
from typing import TYPE_CHECKING, Any

from ._private import INSTANCE_MODULES

if TYPE_CHECKING:
    import dagster as dg

#: What the fork server imports before forking the steps: Dagster (the executor module Dagster adds
#: itself), what a step imports to open its instance, and what a cobalt step imports, lazily or not.
PRELOAD = ("cobalt_dagster", *INSTANCE_MODULES, "upath", "cobalt_lib.run", "cobalt_lib.store", "cobalt_lib.llm",
           "duckdb", "aiohttp")

_environment: tuple[tuple[str, str], ...] | None = None


def step_run_config() -> dict[str, Any]:
    """The `execution` run config of a job on Dagster's default executor: its steps forked from a fork
    server that preloaded cobalt (none where the platform has no fork server: spawn, as before)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return {}
    start = {"forkserver": {"preload_modules": list(PRELOAD)}}
    return {"execution": {"config": {"multiprocess": {"start_method": start}}}}


def forking_executor() -> dg.ExecutorDefinition:
    """Dagster's default executor (same name, same config), its steps forked by default: a run launched with
    no `execution` config of its own forks them too, not only the experiments' jobs, whose default run config
    says so (`step_run_config`). The asset graph's "Materialize" and an asset backfill launch Dagster's
    `__ASSET_JOB` with an empty run config: each of its steps spawned a fresh interpreter. A run config that
    names `in_process`, or `multiprocess` with settings of its own, is taken as written."""
    import dagster as dg

    base = dg.multi_or_in_process_executor
    forked = step_run_config()
    if not forked:
        return base
    return dg.ExecutorDefinition(
        name=base.name, description=base.description, executor_creation_fn=base.executor_creation_fn,
        config_schema=dg.Field(base.config_schema.config_type, default_value=forked["execution"]["config"],
                               is_required=False),
        requirements=base.get_requirements)


def fresh_fork_server() -> None:
    """Stop this process's fork server when the environment changed since the last job was built here,
    so the next run's steps start under the current one (the next step starts a new server)."""
    global _environment
    now = tuple(sorted(os.environ.items()))
    if _environment is not None and now != _environment:
        from multiprocessing import forkserver

        server: Any = forkserver._forkserver  # no public way to stop it
        if getattr(server, "_forkserver_pid", None) is not None:
            server._stop()
    _environment = now
