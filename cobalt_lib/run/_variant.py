"""A variant of an experiment: one named set of parameters the agent receives as `ctx.variant`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Variant:
    """One configuration of the agent: its name, its parameters (`ctx.variant`) and whether it is the baseline."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    baseline: bool = False
    #: Where it stands among the experiment's variants (grids list them in this order).
    position: int = 0

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "params": dict(self.params), "baseline": self.baseline, "position": self.position}
