"""Every call into Dagster's private modules (`dagster._...`), the one place they are made, checked
against the pinned range (`dagster>=1.13,<1.14` in pyproject.toml; tests/dagster_layer/test_private.py).

No public API does these things: open an instance with overrides to its `dagster.yaml` (no
compute-log capture for in-process CLI runs), name the code-location origin of a job that `cobalt
serve` loads (so the UI files a run made outside the webserver with the served job), and execute a
run that was created on the instance (a recording keeps the run id it noted in the store first); read the
Dagster event a console log record carries (cobalt's console logger prints a failed gate on one line);
read the key of the step an op runs in (a shard counts how often it was handed out); and for `cobalt
serve`'s one code server, the location name of its target, whether it answers yet, how often the
webserver and daemon ask it for its id, how often the daemon reloads its snapshot and how often it heartbeats
the server it runs the code in; and name the modules a step process imports to open its instance (a fork
server preloads them).
Raising the pin means re-running that test against the new minor.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import dagster as dg
    from dagster._core.remote_origin import CodeLocationOrigin, RemoteJobOrigin

#: The compute-log manager that captures nothing, as a `dagster.yaml` override.
NO_COMPUTE_LOGS = {"compute_logs": {"module": "dagster._core.storage.noop_compute_log_manager",
                                    "class": "NoOpComputeLogManager", "config": {}}}
#: The modules a step process imports to open the run's instance (`InstanceRef.storage`: the base of every
#: storage, and the default sqlite one): most of a forked step's start-up unless its fork server has them.
INSTANCE_MODULES = ("dagster._core.storage.base_storage", "dagster._core.storage.sqlite_storage",
                    "dagster._core.storage.legacy_storage")


def open_instance(home: Path, overrides: dict[str, Any] | None) -> dg.DagsterInstance:
    """The instance of the `dagster.yaml` in `home`, with `overrides` to it (only reachable through a ref)."""
    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    return dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home), overrides=overrides))


def served_job_origin(kind: str, target: str, root: str, repository: str, job_name: str) -> RemoteJobOrigin | None:
    """The origin of `job_name` in the first code location of `target` (`kind`: module, file or workspace),
    loaded from `root`; None when a workspace lists no code location. Building it reads no code."""
    from dagster._core.remote_origin import RemoteJobOrigin, RemoteRepositoryOrigin
    from dagster._core.workspace.load_target import ModuleTarget, PythonFileTarget, WorkspaceFileTarget

    origins: Sequence[CodeLocationOrigin]
    if kind == "module":
        origins = ModuleTarget(target, None, root, None).create_origins()
    elif kind == "file":
        origins = PythonFileTarget(target, None, root, None).create_origins()
    else:
        origins = WorkspaceFileTarget([target]).create_origins()
    return RemoteJobOrigin(RemoteRepositoryOrigin(origins[0], repository), job_name) if origins else None


def execute_created_run(job: dg.JobDefinition, dagster_run: dg.DagsterRun, instance: dg.DagsterInstance) -> None:
    """Execute, in this process, a run already created on `instance` for `job` (`create_run_for_job`)."""
    from dagster._core.definitions.job_base import InMemoryJob
    from dagster._core.execution.api import execute_run

    execute_run(InMemoryJob(job), dagster_run, instance)


def log_record_event(record: logging.LogRecord) -> dg.DagsterEvent | None:
    """The Dagster event a record that Dagster's log manager hands its loggers carries (None: a plain
    message, such as `context.log.info`)."""
    from dagster._core.log_manager import get_log_record_metadata, has_log_record_metadata

    return get_log_record_metadata(record)["dagster_event"] if has_log_record_metadata(record) else None


def step_key(context: dg.OpExecutionContext) -> str:
    """The key of the step `context` runs in, mapping key included (`asset.op[3]`), as its events name it."""
    return str(context.get_step_execution_context().step.key)


def location_name(kind: str, target: str, root: str) -> str:
    """The code location name Dagster gives a `-m MODULE` or `-f FILE` target (a code server takes it)."""
    from dagster._core.workspace.load_target import ModuleTarget, PythonFileTarget

    made = ModuleTarget(target, None, root, None) if kind == "-m" else PythonFileTarget(target, None, root, None)
    return str(made.create_origins()[0].location_name)


def watch_code_servers_every(seconds: int) -> None:
    """How often this process's webserver or daemon asks each gRPC code server for its id, to notice a
    restarted one (Dagster: every second, a call the shared server's proxy passes on to its child)."""
    from dagster._grpc import server_watcher

    _retune(server_watcher, "WATCH_INTERVAL", seconds)


def refresh_workspace_every(seconds: int) -> None:
    """How often this process's `dagster-daemon` reloads every code location's snapshot from its server
    (Dagster: every minute, the whole repository snapshot built in the code server and read back here)."""
    from dagster._daemon import controller

    _retune(controller, "RELOAD_WORKSPACE_INTERVAL", seconds)


def heartbeat_code_servers_every(seconds: int) -> None:
    """How often this process's `dagster code-server start` heartbeats the gRPC server it runs the code in
    (Dagster: every second; that server stops after 30 s without one, `--heartbeat-ttl`)."""
    from dagster._grpc import client

    _retune(client, "CLIENT_HEARTBEAT_INTERVAL", seconds)


def reuse_sqlite_engines() -> None:
    """Make this process's SQLite run and schedule storages reuse one SQLAlchemy engine per database file.
    Dagster builds a new engine for every call (`create_engine(..., poolclass=NullPool)`: a dialect set up and
    initialised on its first connection), several per sensor tick, heartbeat and run-queue poll: a fifth of an
    idle daemon's CPU. Each connection is still opened and closed per call (the engines keep Dagster's `NullPool`),
    so what a call sees of the file is unchanged; an engine is safe to share between threads."""
    import threading

    import sqlalchemy
    from dagster._core.storage.runs.sqlite import sqlite_run_storage
    from dagster._core.storage.schedules.sqlite import sqlite_schedule_storage

    engines: dict[tuple[str, str], Any] = {}
    lock = threading.Lock()

    def create_engine(url: Any, **kwargs: Any) -> Any:
        key = (str(url), repr(sorted(kwargs.items())))
        with lock:
            if key not in engines:
                engines[key] = sqlalchemy.create_engine(url, **kwargs)
            return engines[key]

    for module in (sqlite_run_storage, sqlite_schedule_storage):
        if getattr(module, "create_engine", None) is not sqlalchemy.create_engine:
            raise RuntimeError(f"{module.__name__}.create_engine is not SQLAlchemy's in this Dagster; "
                               "update cobalt_dagster/_private.py")
        module.create_engine = create_engine  # type: ignore[attr-defined]


def _retune(module: Any, name: str, seconds: int) -> None:
    """Set one of Dagster's interval constants (each read where it is used, at each use); a Dagster without it
    is an error here rather than a setting that silently does nothing."""
    if not isinstance(getattr(module, name, None), (int, float)):
        raise RuntimeError(f"{module.__name__}.{name} is gone from this Dagster; update cobalt_dagster/_private.py")
    setattr(module, name, seconds)


def dagster_cli() -> None:
    """The `dagster` command (its console script's own function), arguments from `sys.argv`."""
    from dagster._cli import main

    main()


def dagster_daemon_cli() -> None:
    """The `dagster-daemon` command (its console script's own function), arguments from `sys.argv`."""
    from dagster._daemon.cli import main

    main()


def code_server_answers(socket: str) -> bool:
    """Whether the code server on the Unix socket `socket` answers a ping."""
    from dagster._grpc.client import DagsterGrpcClient

    try:
        DagsterGrpcClient(socket=socket).ping("cobalt")
    except Exception:  # not listening yet
        return False
    return True
