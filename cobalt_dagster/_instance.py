"""The project's local Dagster instance under `.cobalt/dagster`, created and migrated under a file lock."""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock

from cobalt_lib import Config

if TYPE_CHECKING:
    import dagster as dg

#: Run config that keeps Dagster's per-event console logging out of the terminal reporter.
QUIET_RUN_CONFIG: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def quiet_dagster_warnings() -> None:
    """Partitioned checks and a few APIs we use are marked preview/beta in Dagster 1.13."""
    import dagster as dg

    for category in ("PreviewWarning", "BetaWarning", "SupersessionWarning"):
        cls = getattr(dg, category, None)
        if isinstance(cls, type) and issubclass(cls, Warning):
            warnings.filterwarnings("ignore", category=cls)


def dagster_home(config: Config) -> Path:
    return config.output_path / "dagster"


def local_instance(config: Config) -> dg.DagsterInstance:
    """Open (creating and migrating on first use) the instance; two first runs at once both succeed."""
    import dagster as dg

    home = dagster_home(config)
    home.mkdir(parents=True, exist_ok=True)
    with FileLock(str(home.parent / "dagster.lock"), timeout=120):
        marker = home / ".cobalt-migrated"
        instance = dg.DagsterInstance.from_config(str(home))
        if not marker.exists():
            with contextlib.redirect_stdout(io.StringIO()):  # its progress lines would mix with our output
                instance.upgrade()
            marker.write_text("1\n")
    return instance
