"""Which code location a `cobalt run` belongs to, so the Dagster UI files it with the served job.

A run executed in process on Definitions built by the CLI has no code-location origin, and the UI
leaves such runs out of the job's Runs and Partitions tabs and the Overview timeline (they filter on
the origin's `repository@location` label). `cobalt run` therefore records the origin of the code
location `cobalt serve` loads for the project, picked by the same rule (first match wins):
`[dashboard] module`; `workspace.yaml` in the project root (its first code location); `definitions.py`
in the project root; `cobalt_dagster.definitions`. Building an origin reads no code, so it is cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from cobalt_lib import Config

from ._private import served_job_origin

if TYPE_CHECKING:
    from ._private import RemoteJobOrigin

#: What `cobalt serve` loads when the project has no definitions of its own.
DEFAULT_MODULE = "cobalt_dagster.definitions"
#: The repository name Dagster gives a code location's `Definitions`.
REPOSITORY_NAME = "__repository__"


def served_target(root: Path, module: str | None) -> tuple[str, str]:
    """(kind, target) of the code location `cobalt serve` loads: `module`, `workspace` or `file`."""
    if module:
        return "module", module
    for name, kind in (("workspace.yaml", "workspace"), ("definitions.py", "file")):
        if (root / name).is_file():
            return kind, str(root / name)
    return "module", DEFAULT_MODULE


def job_origin(config: Config, job_name: str) -> RemoteJobOrigin | None:
    """The origin of `job_name` in the code location `cobalt serve` loads for the project (None when a
    workspace.yaml lists no code location)."""
    kind, target = served_target(config.root, config.dashboard.module)
    return served_job_origin(kind, target, str(config.root), REPOSITORY_NAME, job_name)
