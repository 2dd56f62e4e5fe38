"""The Dagster names of an experiment (asset-key prefix, job and partition names) and of its gates' checks."""

from __future__ import annotations

import hashlib
import re


def dagster_name(name: str) -> str:
    """`my-summarizer-agent` -> `my_summarizer_agent`: an experiment's Dagster asset-key prefix and
    DuckDB-safe identifier (every character outside [A-Za-z0-9_] becomes `_`)."""
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return f"x_{safe}" if not safe or safe[0].isdigit() else safe


def dagster_check_name(gate_name: str) -> str:
    """The Dagster check name of a gate, from its name: `exact >= 0.75` -> `gate_exact_min_0_75`
    (the name `cobalt_dagster` gives the check; long names keep a hash to stay apart)."""
    words = gate_name.replace(">=", " min ").replace("<=", " max ")
    name = "gate_" + re.sub(r"_+", "_", dagster_name(words)).strip("_")
    if len(name) > 60:
        name = f"{name[:51].rstrip('_')}_{hashlib.sha1(gate_name.encode()).hexdigest()[:8]}"
    return name


def dagster_check_names(gate_names: list[str]) -> list[str]:
    """`dagster_check_name` of each gate in declaration order; a repeat gets `_2`, `_3`..."""
    seen: dict[str, int] = {}
    names = []
    for gate_name in gate_names:
        base = dagster_check_name(gate_name)
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}_{seen[base]}")
    return names
