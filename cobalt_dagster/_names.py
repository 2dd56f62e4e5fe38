"""Experiment names as Dagster asset-key prefixes and DuckDB-safe identifiers."""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from cobalt_lib import ConfigError
from cobalt_lib.links import dagster_name

__all__ = ["DATASETS_PREFIX", "check_unique", "dagster_name", "dataset_key"]

#: The asset key prefix of stored datasets (`_datasets`).
DATASETS_PREFIX = "datasets"


def dataset_key(name: str) -> dg.AssetKey:
    """The asset of stored dataset `name`."""
    return dg.AssetKey([DATASETS_PREFIX, dagster_name(name)])


def check_unique(names: Iterable[str]) -> dict[str, str]:
    """Map display name -> Dagster name; two names that collide after normalising are an error."""
    seen: dict[str, str] = {}
    for name in names:
        safe = dagster_name(name)
        if safe in seen and seen[safe] != name:
            raise ConfigError(f"Experiments {seen[safe]!r} and {name!r} both become {safe!r} as Dagster names; "
                              "rename one of them.")
        seen[safe] = name
    return {display: safe for safe, display in seen.items()}
