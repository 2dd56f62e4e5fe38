"""Importing evals from other tools (OpenAI Evals, promptfoo, DeepEval) as cobalt experiments.

    from cobalt_lib.imports import import_source
    written = import_source("promptfoo", Path("promptfooconfig.yaml"))

`Model` is what a generated experiment's agent calls. Names load on first use: the CLI stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._import import FORMATS, import_source, plan_import
    from ._inspect import record_logs
    from ._model import Model
    from ._source import ImportRefused
    from ._writer import Written

_EXPORTS = {"FORMATS": "._import", "import_source": "._import", "plan_import": "._import", "Model": "._model",
            "record_logs": "._inspect", "ImportRefused": "._source", "Written": "._writer"}

__all__ = ["FORMATS", "ImportRefused", "Model", "Written", "import_source", "plan_import", "record_logs"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
