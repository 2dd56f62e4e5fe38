"""Which cobalt project the Dagster layer serves: the same rule for definitions, gates and recordings."""

from __future__ import annotations

import os
from pathlib import Path

from cobalt_lib import Config, load_config


def project_dir_from_env() -> Path:
    """`COBALT_PROJECT_DIR` if set, else the working directory (the project root is found upward)."""
    return Path(os.environ.get("COBALT_PROJECT_DIR") or Path.cwd())


def project_config(project_dir: str | Path | None = None) -> Config:
    """The config of `project_dir`, else of `COBALT_PROJECT_DIR`, else of the working directory.

    `cobalt serve` sets `COBALT_PROJECT_DIR`, so code run by its webserver and daemon (a deploy asset
    calling `require_gates_passed`) finds the project even from another working directory.
    """
    return load_config(Path(project_dir) if project_dir else project_dir_from_env())
