"""The pre-warmed run worker: a per-user fork server that keeps Dagster and cobalt imported, so a
Dagster-tracked `cobalt run` skips about 2 s of imports and first-use work (docs/worker.md).

Standard library only, and each name loads its module on first use: the console script consults
`hand_over` before it imports the CLI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._client import hand_over, wants_worker
    from ._launch import WorkerError, WorkerInfo, default_idle_timeout, start, start_in_background, stop, workers
    from ._paths import DIR_VARIABLE, SWITCH_VARIABLE, worker_dir

_EXPORTS = {
    "hand_over": "_client", "wants_worker": "_client",
    "WorkerError": "_launch", "WorkerInfo": "_launch", "default_idle_timeout": "_launch", "start": "_launch",
    "start_in_background": "_launch", "stop": "_launch", "workers": "_launch",
    "DIR_VARIABLE": "_paths", "SWITCH_VARIABLE": "_paths", "worker_dir": "_paths",
}

__all__ = ["DIR_VARIABLE", "SWITCH_VARIABLE", "WorkerError", "WorkerInfo", "default_idle_timeout", "hand_over",
           "start", "start_in_background", "stop", "wants_worker", "worker_dir", "workers"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
