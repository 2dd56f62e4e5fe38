"""The project's local Dagster instance under `.cobalt/dagster`, created and migrated under a file lock."""

from __future__ import annotations

import contextlib
import io
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock

from cobalt_lib import Config

from ._names import dagster_name
from ._private import NO_COMPUTE_LOGS, open_instance

if TYPE_CHECKING:
    import dagster as dg

#: Run config for `cobalt run`: cobalt reports items, gates and failures itself, so Dagster's console
#: logger (which prints a failed gate as an ERROR block with a stack trace) stays silent.
QUIET_RUN_CONFIG: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}

#: The instance's dagster.yaml: without one, `dagster dev`, the webserver and `definitions validate`
#: warn that none was found; telemetry stays off for a tool that runs inside other projects. Runs
#: print (and keep) Dagster's INFO and above: with no logger in a run's config, Dagster's console
#: logger takes `python_log_level` (DEBUG when unset: a line per step start, input, output and
#: handled event in `cobalt serve`'s terminal, where the runs the daemon launches print). Cobalt's
#: definitions use no automation conditions and no freshness policies, so the two daemons that
#: evaluate them stay off (each wakes every few seconds: a share of an idle `cobalt serve`'s CPU).
INSTANCE_YAML = ("# Written by cobalt; edit freely, cobalt never overwrites it.\ntelemetry:\n  enabled: false\n"
                 "# DEBUG prints every Dagster event of a run on the console\npython_logs:\n  python_log_level: INFO\n"
                 "# cobalt uses no automation conditions or freshness policies: set these true if yours do\n"
                 "auto_materialize:\n  enabled: false\n  use_sensors: false\nfreshness:\n  enabled: false\n")
MARKER = ".cobalt-migrated"

#: The instance cobalt's sensors read at each tick, one per instance (its serialized ref), kept for the code
#: server's life. `context.instance` opens a new one every tick, and opening one checks the storage's
#: schema against Dagster's migrations (alembic reading every migration script): about 85% of an idle
#: code server's CPU, for the record sensor's look that finds nothing to record.
_INSTANCES: dict[str, dg.DagsterInstance] = {}
_INSTANCES_LOCK = threading.Lock()


def tick_instance(context: dg.SensorEvaluationContext) -> dg.DagsterInstance:
    """The instance of a sensor tick: the one opened at an earlier tick on the same instance, else a new
    one (a context built in a test, with an instance and no ref, gives its own)."""
    ref = context.instance_ref
    if ref is None:
        return context.instance
    import dagster as dg

    key = dg.serialize_value(ref)
    with _INSTANCES_LOCK:
        if key not in _INSTANCES:
            _INSTANCES[key] = dg.DagsterInstance.from_ref(ref)
        return _INSTANCES[key]


def quiet_dagster_warnings() -> None:
    """Partitioned checks and a few APIs we use are marked preview/beta in Dagster 1.13."""
    import dagster as dg

    for category in ("PreviewWarning", "BetaWarning", "SupersessionWarning"):
        cls = getattr(dg, category, None)
        if isinstance(cls, type) and issubclass(cls, Warning):
            warnings.filterwarnings("ignore", category=cls)


def dagster_home(config: Config) -> Path:
    return config.output_path / "dagster"


#: `cobalt run` prints its own live output; Dagster's compute-log capture would route it through a
#: file, a `tail -F` and a watcher process per step (and on Ctrl-C the watcher prints a traceback): its
#: instance captures none (`NO_COMPUTE_LOGS`).


def local_instance(config: Config, *, capture_logs: bool = True) -> dg.DagsterInstance:
    """Open (creating and migrating on first use) the instance; two first runs at once both succeed.

    `capture_logs=False` (for in-process CLI runs) leaves step stdout/stderr on the terminal instead
    of copying them into the instance's compute logs.
    """
    home = dagster_home(config)
    home.mkdir(parents=True, exist_ok=True)
    with FileLock(str(home.parent / "dagster.lock"), timeout=120):
        yaml = home / "dagster.yaml"
        if not yaml.exists():
            yaml.write_text(INSTANCE_YAML, encoding="utf-8")
        overrides = None if capture_logs else NO_COMPUTE_LOGS
        instance = open_instance(home, overrides)
        _migrate(instance, home / MARKER)
    return instance


def _migrate(instance: dg.DagsterInstance, marker: Path) -> None:
    """Migrate the storage on first use and again whenever the installed Dagster version changes
    (an upgrade can bring schema migrations); the marker holds the version it was migrated for."""
    import dagster as dg

    if marker.is_file() and marker.read_text(encoding="utf-8").strip() == dg.__version__:
        return
    with contextlib.redirect_stdout(io.StringIO()):  # its progress lines would mix with our output
        instance.upgrade()
    marker.write_text(f"{dg.__version__}\n", encoding="utf-8")


def forget_runs(config: Config, runs: Mapping[str, str]) -> None:
    """Delete cobalt runs (run id -> experiment) from the local instance, when there is one: their
    Dagster runs (with those runs' events) and their partitions, so the UI no longer lists them."""
    if not runs or not (dagster_home(config) / "dagster.yaml").is_file():
        return  # never create an instance only to clean it
    import dagster as dg

    with local_instance(config) as instance:
        for run_id, experiment in runs.items():
            for record in instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": run_id})):
                instance.delete_run(record.dagster_run.run_id)
            instance.delete_dynamic_partition(f"{dagster_name(experiment)}_runs", run_id)
