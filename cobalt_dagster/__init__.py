"""cobalt on Dagster: experiments as partitioned assets, quality gates as blocking asset checks.

    # definitions.py of your code location
    import dagster as dg
    from cobalt_dagster import build_definitions

    defs = dg.Definitions.merge(build_definitions("path/to/project"), my_definitions)

Per experiment: assets `<experiment>/dataset`, `/outputs`, `/scores`, `/aggregates` (one dynamic
partition per cobalt run id), a blocking check per quality gate, a job `<experiment>_eval`, a
schedule when `[schedules]` names it, and one sensor, `cobalt_sensor` (`SENSOR`), that starts `cobalt request`'s
runs, records the runs Dagster did not launch and records new dataset versions.

In a Dagster project made with `create-dagster`, `CobaltComponent` adds the same from a `defs.yaml`:

    dg scaffold defs cobalt_dagster.CobaltComponent cobalt_evals --project-dir path/to/cobalt_project
"""

from cobalt_lib.links import cobalt_tags, dagster_name, dagster_tags, tag_key
from cobalt_lib.links import dagster_check_name as check_name
from cobalt_lib.links import dagster_check_names as check_names

from ._assets import ExperimentDefs, experiment_defs
from ._automation import daemon_running, forget_daemon, request_run
from ._code_server import daemon_command, shared_code_server, wait_for_code_server
from ._component import CobaltComponent
from ._console import pump as print_console
from ._definitions import build_definitions, build_experiment_defs
from ._gates import require_gates_passed
from ._instance import dagster_home, forget_runs, local_instance
from ._record import print_unrecorded, record_runs
from ._reload import POLL_SECONDS, DefinitionsWatcher
from ._replay import RECORD_TAG
from ._resource import CobaltResource
from ._sensor import SENSOR_NAME as SENSOR
from ._translator import STAGES, CobaltTranslator
from ._webserver import SECRET_HEADER as WEBSERVER_SECRET_HEADER
from ._webserver import SECRET_VARIABLE as WEBSERVER_SECRET_VARIABLE
from ._webserver import SOCKET_VARIABLE as WEBSERVER_SOCKET_VARIABLE
from ._webserver import webserver_command

__all__ = [
    "POLL_SECONDS",
    "RECORD_TAG",
    "SENSOR",
    "STAGES",
    "WEBSERVER_SECRET_HEADER",
    "WEBSERVER_SECRET_VARIABLE",
    "WEBSERVER_SOCKET_VARIABLE",
    "CobaltComponent",
    "CobaltResource",
    "CobaltTranslator",
    "DefinitionsWatcher",
    "ExperimentDefs",
    "build_definitions",
    "build_experiment_defs",
    "check_name",
    "check_names",
    "cobalt_tags",
    "daemon_command",
    "daemon_running",
    "dagster_home",
    "dagster_name",
    "dagster_tags",
    "experiment_defs",
    "forget_daemon",
    "forget_runs",
    "local_instance",
    "print_console",
    "print_unrecorded",
    "record_runs",
    "request_run",
    "require_gates_passed",
    "shared_code_server",
    "tag_key",
    "wait_for_code_server",
    "webserver_command",
]
