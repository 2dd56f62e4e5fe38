"""Helpers the commands share: the project's config and store, JSON output."""

from __future__ import annotations

import json
import sys
from typing import Any

from ..config._config import Config, load_config
from ..results._store import Store


def project_config() -> Config:
    config = load_config()
    for other in config.shadowed:  # a silently ignored file is a setting the user thinks applies
        print(f"warning: {other} is ignored: {config.source} comes first and is the configuration used; "
              "merge the two files into one.", file=sys.stderr)
    return config


def project_store(config: Config) -> Store:
    return Store(config.output_path / "cobalt.duckdb")


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")
