"""Evaluator kinds from installed packages: the `cobalt.evaluators` entry point group.

An entry point names a kind class (a subclass of `EvaluatorKind`) or a plain function
`fn(ctx, **options)`; a function's keyword parameters become the kind's options (typed by their
annotations, required when they have no default) and it is called like a `function` evaluator.
"""

from __future__ import annotations

import inspect
import typing
import warnings
from collections.abc import Callable
from importlib import metadata
from typing import Any, ClassVar

from pydantic import Field, create_model

from ._context import EvalContext, Scoring
from ._kind import EvaluatorKind
from ._registry import KINDS, register
from ._usercode import call_user

GROUP = "cobalt.evaluators"

#: Entry points that failed to load, by name: the error says why, where the kind would be used.
BROKEN: dict[str, str] = {}
#: Where each plugin kind comes from: `package 1.2 (module:attr)`.
SOURCES: dict[str, str] = {}


class FunctionPlugin(EvaluatorKind):
    """Base of the kinds made from a plugin's plain function."""

    #: The plugin's function, set on each generated subclass.
    plugin_fn: ClassVar[Callable[..., Any] | None] = None

    async def score(self, ctx: EvalContext, scoring: Scoring) -> Any:
        fn = type(self).plugin_fn
        assert fn is not None
        return await call_user(fn, ctx, scoring, **self.model_dump())


class PluginWarning(UserWarning):
    """An installed evaluator plugin failed to load; evaluators of other kinds work as before."""


def load_plugins() -> None:
    """Register every installed `cobalt.evaluators` entry point; a broken one is recorded and warned about."""
    for entry in metadata.entry_points(group=GROUP):
        _load(entry)


def load_plugin(name: str) -> bool:
    """Load only the entry point called `name` (plugins load on first lookup); whether it registered a kind."""
    for entry in metadata.entry_points(group=GROUP, name=name):
        _load(entry)
    return name in KINDS


def _load(entry: metadata.EntryPoint) -> None:
    if entry.name in BROKEN or (entry.name in KINDS and entry.name in SOURCES):
        return
    dist = f"{entry.dist.name} {entry.dist.version}" if entry.dist else "an unknown distribution"
    try:
        target = entry.load()
        cls = _as_kind(entry.name, target)
    except Exception as exc:  # a plugin's import error must not break every other evaluator
        BROKEN[entry.name] = f"{dist} ({entry.value}): {type(exc).__name__}: {exc}"
        warnings.warn(f"evaluator plugin {entry.name!r} from {BROKEN[entry.name]}; its kind cannot be used "
                      f"(reinstall or remove {dist.split(' ')[0]})", PluginWarning, stacklevel=3)
        return
    SOURCES[cls.kind] = f"{dist} ({entry.value})"


def _as_kind(name: str, target: Any) -> type[EvaluatorKind]:
    if isinstance(target, type) and issubclass(target, EvaluatorKind):
        if not target.kind:
            target.kind = name
            register(target)
        return target
    if callable(target):
        return function_kind(name, target)
    raise TypeError(f"{target!r} is neither an EvaluatorKind subclass nor a function fn(ctx, **options)")


def function_kind(name: str, fn: Callable[..., Any]) -> type[EvaluatorKind]:
    """A kind named `name` whose options are `fn`'s keyword parameters after `ctx`."""
    fields: dict[str, Any] = {}
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # an annotation that cannot be resolved: the option takes any value
        hints = {}
    for param in list(inspect.signature(fn).parameters.values())[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            continue
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, Field(default))
    cls = create_model(f"Plugin_{name.replace('-', '_')}", __base__=FunctionPlugin, __doc__=inspect.getdoc(fn),
                       __module__=getattr(fn, "__module__", __name__), **fields)
    cls.plugin_fn = staticmethod(fn)
    cls.kind = name
    register(cls)
    return cls
