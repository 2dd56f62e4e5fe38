"""Variants: named sets of parameters the agent receives as `ctx.variant`, one of them the baseline.

    variants=[{"name": "mini", "model": "gpt-4o-mini"}, {"name": "4o", "model": "gpt-4o"}]
    variants={"model": ["gpt-4o-mini", "gpt-4o"], "prompt": ["v1", "v2"]}    # every combination

A list gives each set its `name` (else one made of its parameters); a mapping of axes gives every
combination, named `model=gpt-4o-mini,prompt=v1`. The baseline is the first, unless `baseline=` names one.
"""

from __future__ import annotations

import difflib
import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError
from ..run._plan import RunPlan
from ..run._requests import FreshRun
from ..run._variant import Variant

if TYPE_CHECKING:
    from ._experiment import Experiment

#: The longest variant name: it is a Dagster tag value and a column in every grid.
MAX_NAME = 60


def parse_variants(spec: Any, baseline: str | None, where: str) -> list[Variant]:
    """The variants `spec` declares (a list of parameter sets or a mapping of axes), the baseline marked.

    Every problem is one ConfigError sentence naming the experiment and the bad entry."""
    if spec is None:
        if baseline is not None:
            raise ConfigError(f"{where}: baseline={baseline!r} names a variant, but the experiment declares no "
                              "variants; add variants=[...] or remove baseline.")
        return []
    if isinstance(spec, Mapping):
        sets = _product(spec, where)
    elif isinstance(spec, Sequence) and not isinstance(spec, str | bytes):
        sets = [_named_set(entry, i, where) for i, entry in enumerate(spec)]
    else:
        raise ConfigError(f"{where}: variants must be a list of parameter sets ([{{'name': 'a', 'model': ...}}, ...]) "
                          f"or a mapping of axes ({{'model': [...], 'prompt': [...]}}), got {type(spec).__name__}.")
    if not sets:
        raise ConfigError(f"{where}: variants is empty; declare at least one, or leave variants out.")
    names = [name for name, _ in sets]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise ConfigError(f"{where}: variant name {twice!r} is used twice; give each variant its own 'name'.")
    chosen = names[0] if baseline is None else baseline
    if chosen not in names:
        close = difflib.get_close_matches(str(chosen), names, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"variants are {', '.join(map(repr, names))}."
        raise ConfigError(f"{where}: baseline={baseline!r} is not one of its variants; {hint}")
    return [Variant(name, MappingProxyType(params), baseline=name == chosen, position=i)
            for i, (name, params) in enumerate(sets)]


def _product(axes: Mapping[Any, Any], where: str) -> list[tuple[str, dict[str, Any]]]:
    if not axes:  # the product of no axes is one empty set: a lone variant nobody declared
        return []
    for key, values in axes.items():
        _check_key(key, where)
        if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
            raise ConfigError(f"{where}: variant axis {key!r} must be a list of values, got {values!r}.")
        if not list(values):
            raise ConfigError(f"{where}: variant axis {key!r} has no values; give it at least one.")
    keys = list(axes)
    combos = itertools.product(*(list(axes[k]) for k in keys))
    sets = [dict(zip(keys, combo, strict=True)) for combo in combos]
    for params in sets:
        for key, value in params.items():
            _check_value(key, value, where)
    return [(_name_of(params), params) for params in sets]


def _named_set(entry: Any, position: int, where: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: variant {position + 1} must be a mapping of parameters "
                          f"({{'name': ..., 'model': ...}}), got {entry!r}.")
    params = {k: v for k, v in entry.items() if k != "name"}
    for key, value in params.items():
        _check_key(key, where)
        _check_value(key, value, where)
    name = entry.get("name", _name_of(params))
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: variant {position + 1} needs a non-empty string 'name' (or some parameters "
                          f"to name it by), got {name!r}.")
    if len(name) > MAX_NAME:
        raise ConfigError(f"{where}: variant name {name[:20]!r}... is {len(name)} characters long; give it a "
                          f"'name' of at most {MAX_NAME}.")
    return name, params


def _check_key(key: Any, where: str) -> None:
    if not isinstance(key, str) or not key.isidentifier():
        raise ConfigError(f"{where}: variant parameter names must be identifiers such as 'model', got {key!r}.")


def _check_value(key: str, value: Any, where: str) -> None:
    """Parameters are stored with each run and shown in every grid: they must be JSON."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: variant parameter {key!r} = {value!r} is not a JSON value (a string, number, "
                          "bool, None, list or dict); pass a name and look the object up in the agent.") from None


def _name_of(params: Mapping[str, Any]) -> str:
    """`model=gpt-4o,prompt=v2`: the name of a parameter set declared without one."""
    return ",".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in params.items()) or "default"


def select_variants(variants: Sequence[Variant], wanted: Sequence[str], where: str) -> list[Variant]:
    """The variants `--variant` keeps: each entry a variant's name, or `key=value` matching its parameters.

    The baseline always runs with them: every variant's verdict is against it."""
    if not wanted:
        return list(variants)
    chosen: set[str] = set()
    for entry in wanted:
        found = [v.name for v in variants if _matches(v, entry)]
        if not found:
            names = [v.name for v in variants]
            close = difflib.get_close_matches(entry, names, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"its variants are {', '.join(map(repr, names))}."
            raise ConfigError(f"--variant {entry!r} matches no variant of {where}; {hint}")
        chosen.update(found)
    return [v for v in variants if v.name in chosen or v.baseline]


def _matches(variant: Variant, entry: str) -> bool:
    if entry == variant.name:
        return True
    key, eq, value = entry.partition("=")
    if not eq or key not in variant.params:
        return False
    actual = variant.params[key]
    return (actual if isinstance(actual, str) else json.dumps(actual)) == value


def check_gate_variants(gates: Iterable[Any], variants: Sequence[Variant], where: str) -> None:
    """A gate naming a variant (`threshold(..., variant="v2")`) must name one the experiment declares."""
    names = [v.name for v in variants]
    for gate in gates:
        named = getattr(gate, "variant", None)
        if named is None or named in names:
            continue
        if not names:
            raise ConfigError(f"{where}: gate {gate.name!r} names variant {named!r}, but the experiment declares "
                              "no variants; add variants=[...] or remove variant= from the gate.")
        close = difflib.get_close_matches(named, names, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"variants are {', '.join(map(repr, names))}."
        raise ConfigError(f"{where}: gate {gate.name!r} names variant {named!r}, which is not one of its variants; "
                          f"{hint}")


def variant_plans(experiment: Experiment, request: FreshRun, wanted: Sequence[str],
                  plan: Callable[[FreshRun], RunPlan]) -> list[RunPlan]:
    """One plan per variant of `experiment` that `wanted` keeps (all when empty; the baseline always), all
    in one new run group; a single plan for an experiment without variants."""
    if not experiment.variants:
        return [plan(request)]
    from ..run._group import new_group_id  # on use: a run without variants loads no run group

    group = new_group_id()
    chosen = select_variants(experiment.variants, wanted, f"experiment {experiment.name!r}")
    return [plan(replace(request, variant=v.name, group_id=group, run_id=None)) for v in chosen]


def check_variant_filter(experiments: Sequence[Experiment], wanted: Sequence[str]) -> None:
    """`--variant` with no selected experiment that declares variants is a usage error, not a silent no-op."""
    if wanted and not any(e.variants for e in experiments):
        names = ", ".join(repr(e.name) for e in experiments) or "none"
        raise ConfigError(f"--variant {wanted[0]!r}: none of the selected experiments ({names}) declares variants; "
                          "declare variants=[...] in the experiment (docs/variants.md) or drop --variant.")
