"""Every evaluator kind available here, built-in and plugin, and what `cobalt evaluators` lists."""

from __future__ import annotations

import difflib
import functools
import importlib
import pkgutil
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from .._errors import EvaluatorError
from . import kinds as _builtin
from ._kind import EvaluatorKind
from ._plugins import BROKEN, SOURCES, load_plugin, load_plugins
from ._registry import KINDS

_builtins_loaded = False
#: The kinds every project meets first, registered (and so listed) before the catalogue of the others.
_CORE = ("_llm_judge", "_function", "_exact_match", "_similarity", "_contains")


@functools.cache
def _builtin_modules() -> tuple[str, ...]:
    """The built-in kind modules, core ones first (read once: every listing orders kinds by it)."""
    names = (m.name for m in pkgutil.iter_modules(_builtin.__path__))
    return tuple(sorted(names, key=lambda name: (_CORE.index(name) if name in _CORE else len(_CORE), name)))


def _load_builtins() -> None:
    global _builtins_loaded
    if not _builtins_loaded:
        for name in _builtin_modules():
            importlib.import_module(f"{_builtin.__name__}.{name}")
        _builtins_loaded = True


def _load_builtin(name: str) -> bool:
    """Import only the built-in module named after kind `name` (`exact-match`: `_exact_match`), if there
    is one and it defines the kind: a run imports the kinds it uses, not all thirty (20 ms)."""
    module = "_" + name.replace("-", "_")
    if module not in _builtin_modules():
        return False
    importlib.import_module(f"{_builtin.__name__}.{module}")
    return name in KINDS


def evaluator_kinds() -> dict[str, type[EvaluatorKind]]:
    """Every evaluator kind by name: the built-ins (the core ones first), installed plugins and kinds
    defined in this process."""
    _load_builtins()
    load_plugins()
    order = {f"{_builtin.__name__}.{name}": i for i, name in enumerate(_builtin_modules())}
    # Whatever a run imported first, the built-ins are listed in their own order, then the rest as added.
    return dict(sorted(KINDS.items(), key=lambda kind: order.get(kind[1].__module__, len(order))))


def find_kind(name: Any, where: str) -> type[EvaluatorKind]:
    """The kind called `name`, or an EvaluatorError naming the installed kinds (or why its plugin failed).

    Only the plugin of that name is loaded: a broken plugin that a run does not use cannot break it."""
    if isinstance(name, str) and (name in KINDS or _load_builtin(name)):
        return KINDS[name]
    _load_builtins()
    if isinstance(name, str) and (name in KINDS or load_plugin(name)):
        return KINDS[name]
    if isinstance(name, str) and name in BROKEN:
        raise EvaluatorError(f"{where} has type {name!r}, whose plugin failed to load: {BROKEN[name]}")
    known = evaluator_kinds()
    close = difflib.get_close_matches(str(name), known, n=1)
    plugins = [f"{kind} (from {SOURCES[kind].split(' (')[0]})" for kind in known if kind in SOURCES]
    installed = ", ".join([*(kind for kind in known if kind not in SOURCES), *plugins])
    hint = f"did you mean {close[0]!r}? Installed kinds: {installed}" if close else (
        f"use one of the installed kinds: {installed}")
    raise EvaluatorError(f"{where} has unknown type {name!r}; {hint}. A plugin's kind is there once its package is "
                         "installed in this environment.")


class _Descriptions(Mapping[str, str]):
    """`EVALUATOR_TYPES`: kind name -> description, read from the registry when first used."""

    def __getitem__(self, name: str) -> str:
        return evaluator_kinds()[name].description()

    def __iter__(self) -> Iterator[str]:
        return iter(evaluator_kinds())

    def __len__(self) -> int:
        return len(evaluator_kinds())

    def __repr__(self) -> str:
        return repr(dict(self))


EVALUATOR_TYPES: Mapping[str, str] = _Descriptions()


class OptionInfo(BaseModel):
    """One option of a kind, as `cobalt evaluators` shows it."""

    name: str
    type: str
    required: bool
    default: Any = None
    description: str | None = None


class KindInfo(BaseModel):
    """One evaluator kind, as `cobalt evaluators` shows it."""

    name: str
    description: str
    source: str
    default_threshold: float
    options: list[OptionInfo]


def describe_kinds() -> list[KindInfo]:
    """Every kind with its description, where it comes from, its pass mark and its options."""
    return [KindInfo(name=name, description=cls.description(), source=_source(name, cls),
                     default_threshold=cls.default_threshold, options=_options(cls))
            for name, cls in evaluator_kinds().items()]


def broken_plugins() -> dict[str, str]:
    """Plugins that failed to load, by entry point name, with the error."""
    evaluator_kinds()
    return dict(BROKEN)


def _source(name: str, cls: type[EvaluatorKind]) -> str:
    if name in SOURCES:
        return f"plugin {SOURCES[name]}"
    return "built-in" if cls.__module__.startswith(_builtin.__name__) else f"{cls.__module__}.{cls.__qualname__}"


def _options(cls: type[EvaluatorKind]) -> list[OptionInfo]:
    options = []
    for name in cls.option_names():
        field = cls.option_field(name)
        required = field.is_required()
        default = None if required or field.default is PydanticUndefined else field.default
        options.append(OptionInfo(name=name, type=type_name(field.annotation), required=required,
                                  default=default, description=field.description))
    return options


def type_name(annotation: Any) -> str:
    """`str | None`, `bool`, `callable`, `list[str]`: an option's type as a user reads it."""
    if annotation is None or annotation is type(None):
        return "None"
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(arg) for arg in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(arg) for arg in typing.get_args(annotation))
    if (origin is not None and getattr(origin, "__name__", "") == "Callable") or annotation is typing.Callable:
        return "callable"
    if origin is not None:
        args = ", ".join(type_name(arg) for arg in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if annotation is Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))
