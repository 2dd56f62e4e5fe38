"""The evaluator kinds known to this process, by name. Kinds register themselves when their class is
defined (see `EvaluatorKind`); `_catalog` imports the built-in ones and the installed plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import EvaluatorError

if TYPE_CHECKING:
    from ._kind import EvaluatorKind

#: name -> kind class, in registration order (built-ins first).
KINDS: dict[str, type[EvaluatorKind]] = {}


def register(cls: type[EvaluatorKind]) -> None:
    """Add `cls` under `cls.kind`. Defining the same class again (a notebook re-running a cell, a
    reloaded module) replaces it; another class taking a name already used is an error."""
    name = cls.kind
    known = KINDS.get(name)
    if known is not None and _origin(known) != _origin(cls):
        raise EvaluatorError(f"Evaluator kind {name!r} is defined twice: by {_origin(known)} and by {_origin(cls)}; "
                             "rename one of them (the `kind` class variable).")
    KINDS[name] = cls


def kinds_using(option: str) -> list[str]:
    """The kinds that have an option of that name (for "it is for llm-judge evaluators"), every built-in
    kind included, in their listed order (a run imports only the kinds it uses)."""
    from ._catalog import evaluator_kinds

    return [name for name, cls in evaluator_kinds().items() if option in cls.option_names()]


def _origin(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
