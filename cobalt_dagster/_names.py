"""Experiment names as Dagster asset-key prefixes and DuckDB-safe identifiers."""

from __future__ import annotations

from collections.abc import Iterable

from cobalt_lib import ConfigError
from cobalt_lib.links import dagster_name

__all__ = ["check_unique", "dagster_name"]


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
