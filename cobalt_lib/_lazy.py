"""A package's names imported on first use (PEP 562), so importing the package stays light."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_names(package: str, exports: Mapping[str, str], public: Iterable[str],
               namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`: each name of `exports` read from its module (relative
    to the package) when first asked for, then kept in `namespace` (the package's globals), so the next
    lookup is a plain attribute."""
    names = tuple(public)

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*names, *(name for name in namespace if name.startswith("__"))})

    return __getattr__, __dir__
