"""Experiment names as Dagster asset-key prefixes and DuckDB-safe identifiers."""

from __future__ import annotations

import re
from collections.abc import Iterable

from cobalt_lib import ConfigError


def dagster_name(name: str) -> str:
    """`my-summarizer-agent` -> `my_summarizer_agent`: every character outside [A-Za-z0-9_] becomes `_`."""
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return f"x_{safe}" if not safe or safe[0].isdigit() else safe


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
