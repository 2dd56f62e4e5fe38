"""Run requests for the `cobalt serve` daemon: a JSON file per request, which cobalt_dagster's sensor picks up.

Written here, below cobalt_dagster, so that `cobalt request` writes one without importing Dagster (a second
of imports, and Dagster's import runs `file -b` through `platform.architecture()`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..config._config import Config
from ._plan import new_run_id

#: The folder under `output_dir` the sensor reads requests from.
REQUESTS_DIR = "requests"


def requests_dir(config: Config) -> Path:
    return config.output_path / REQUESTS_DIR


def write_run_request(config: Config, experiment: str, **options: Any) -> Path:
    """Drop a request for a run of `experiment` (renamed into place, so the sensor never reads half a file)."""
    directory = requests_dir(config)
    directory.mkdir(parents=True, exist_ok=True)
    run_id = new_run_id()
    path = directory / f"{run_id}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"experiment": experiment, "run_id": run_id, **options}), encoding="utf-8")
    tmp.replace(path)
    return path


def local_instance_exists(config: Config) -> bool:
    """Whether the project's local Dagster instance was ever created (without one, no daemon ever ran)."""
    return (config.output_path / "dagster" / "dagster.yaml").is_file()
